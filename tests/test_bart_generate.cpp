// Encoder-decoder generation equal to HF's generate(): BartForConditionalGeneration on the tiny
// fixture tests/fixtures/bart-cond-gen, greedy and beam search with forced bos / eos, min
// length, min new tokens, no_repeat_ngram_size and repetition_penalty, through
// make_seq2seq_decoder (BART's cached decoder and the recompute one). The fixture
// (tests/fixtures/bart-cond-gen.generate.json) is made by
// tests/fixtures/make_fixtures_bart_generate.sh; the processors themselves are pinned down by
// hand in tests/test_logits_processors.cpp and tests/test_beam_search.cpp.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "hf_generate_cases.h"
#include "kernels/device.h"
#include "kernels/emulated_gpu.h"

namespace strata::gen {
namespace {

using nlohmann::json;

const json& fixture() {
  static const json doc = test::read_json_fixture("bart-cond-gen.generate.json");
  return doc;
}

template <typename T>
test::ScoreAgreement expect_hf_cases(bool use_cache, double rel_tol) {
  return test::expect_hf_generate_cases<T>("bart-cond-gen", fixture(), use_cache, rel_tol);
}

void print(const char* what, const test::ScoreAgreement& a) {
  test::print_score_agreement((std::string("BART generate vs HF, ") + what).c_str(), a);
}

// The float64 model: its logits round to HF's float32 ones, so beam scores differ only by the
// log-softmax's rounding, as for GPT-2 (tests/test_beam_search.cpp uses the same tolerance).
TEST(BartGenerateHfParity, Fp64SequencesAndScoresEqualHfGenerate) {
  ASSERT_GE(fixture()["cases"].size(), 60u);
  print("fp64 model, cached decoder", expect_hf_cases<double>(true, 5e-7));
  print("fp64 model, recompute", expect_hf_cases<double>(false, 5e-7));
}

// The float32 model (what `strata generate` and seq2seq evaluation run): the same tokens, the
// scores to 1e-5 of their size.
TEST(BartGenerateHfParity, Fp32SequencesEqualHfGenerate) {
  print("fp32 model, cached decoder", expect_hf_cases<float>(true, 1e-5));
}

// On the emulated GPU (kernels/emulated_gpu.h; CTest sets STRATA_EMULATED_GPU=1): the model on
// the device, BART's and T5's cached decoders give HF's sequences, as on the CPU.
TEST(Seq2SeqGenerateOnEmulatedGpu, BartAndT5SequencesEqualHfGenerate) {
  if (!kernels::emulated::enabled()) GTEST_SKIP() << "STRATA_EMULATED_GPU=1 not set";
  kernels::use_device(kernels::Device::cuda(0));
  // The cached decoders (the recompute one runs the model's forward, which the step tests cover).
  for (const char* name : {"bart-cond-gen", "t5-cond-gen", "t5-v1_1-cond-gen"}) {
    const std::string t5 = std::string(name).starts_with("t5") ? ".gz" : "";
    test::expect_hf_generate_cases<float>(name, test::read_json_fixture(name + std::string(".generate.json") + t5),
                                          true, 1e-5);
  }
  kernels::use_device(kernels::Device::cpu());
}

}  // namespace
}  // namespace strata::gen
