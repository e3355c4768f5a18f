// Encoder-decoder generation equal to HF's generate(): BartForConditionalGeneration on the tiny
// fixture tests/fixtures/bart-cond-gen, greedy and beam search with forced bos / eos, min
// length, min new tokens, no_repeat_ngram_size and repetition_penalty, through
// make_seq2seq_decoder (BART's cached decoder and the recompute one). The fixture
// (tests/fixtures/bart-cond-gen.generate.json) is made by
// tests/fixtures/make_fixtures_bart_generate.sh; the processors themselves are pinned down by
// hand in tests/test_logits_processors.cpp and tests/test_beam_search.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generate/generator.h"
#include "kernels/ops.h"
#include "models/causal_decoder.h"
#include "models/pretrained.h"
#include "test_util_fs.h"

namespace strata::gen {
namespace {

using ids = std::vector<int32_t>;
using nlohmann::json;

const json& fixture() {
  static const json doc = [] {
    std::ifstream in(test::fixture("bart-cond-gen.generate.json"));
    return json::parse(in);
  }();
  return doc;
}

// The model directory's generation config (forced_eos_token_id 2 from its
// generation_config.json) with the case's settings, as the script passes them to generate().
GenerationConfig config_of(const json& c) {
  std::vector<std::string> ignored;
  GenerationConfig g = load_generation_config(test::fixture("bart-cond-gen"), &ignored);
  EXPECT_TRUE(ignored.empty());
  g.max_length = c["max_length"].get<int>();  // counts the decoder start token, as HF's does
  g.num_beams = c["num_beams"].get<int>();
  if (g.num_beams > 1) {
    g.length_penalty = c["length_penalty"].get<double>();
    const json& es = c["early_stopping"];
    g.early_stopping = es.is_string() ? EarlyStopping::Never
                       : es.get<bool>() ? EarlyStopping::OnceNumBeamsDone
                                        : EarlyStopping::Heuristic;
    g.num_return_sequences = c["num_return_sequences"].get<int>();
  }
  g.no_repeat_ngram_size = c["no_repeat_ngram_size"].get<int>();
  g.repetition_penalty = c["repetition_penalty"].get<double>();
  g.min_length = c["min_length"].get<int>();
  if (!c["min_new_tokens"].is_null()) g.min_new_tokens = c["min_new_tokens"].get<int>();
  if (!c["forced_bos_token_id"].is_null()) g.forced_bos_token_id = c["forced_bos_token_id"].get<int32_t>();
  g.forced_eos_token_ids = c["forced_eos_token_id"].is_null() ? ids{} : ids{c["forced_eos_token_id"].get<int32_t>()};
  g.eos_token_ids = {c["eos_token_id"].get<int32_t>()};
  g.validate("");
  return g;
}

// How a run's beam scores compare with HF's.
struct ScoreAgreement {
  double worst = 0;  // largest |strata - HF|
  int equal = 0, total = 0;
};

// Every case: the same new tokens as HF, and beam search's sequences_scores within `rel_tol` of
// their size. One thread, as in test_beam_search.cpp (the products are tiny).
template <typename T>
ScoreAgreement expect_hf_cases(bool use_cache, double rel_tol) {
  const int threads = kernels::num_threads();
  kernels::set_num_threads(1);
  const auto m = load_pretrained<T>(test::fixture("bart-cond-gen"));
  const ModelConfig& cfg = m->config();
  const ids start = {fixture()["decoder_start_token_id"].get<int32_t>()};
  EXPECT_EQ(start[0], cfg.raw["decoder_start_token_id"].get<int32_t>());
  ScoreAgreement a;
  uint64_t index = 0;
  for (const json& c : fixture()["cases"]) {
    SCOPED_TRACE(c.dump().substr(0, 300));
    const GenerationConfig g = config_of(c);
    const auto decoder = make_seq2seq_decoder(*m, c["source"].get<ids>(), use_cache);
    const auto out = generate(*decoder, start, g, cfg.vocab_size, cfg.max_position_embeddings, index++);
    const json& want = c["sequences"];
    EXPECT_EQ(out.size(), want.size());
    for (size_t i = 0; i < std::min(out.size(), want.size()); ++i) {
      EXPECT_EQ(out[i].ids, want[i].get<ids>()) << "sequence " << i;
      if (g.num_beams == 1) continue;
      const double hf = c["sequences_scores"][i].get<double>(), diff = std::abs(double(*out[i].score) - hf);
      a.worst = std::max(a.worst, diff);
      a.equal += diff == 0;
      ++a.total;
      EXPECT_LE(diff, rel_tol * std::max(1.0, std::abs(hf)))
          << "sequence " << i << ": " << *out[i].score << " vs " << hf;
    }
  }
  kernels::set_num_threads(threads);
  return a;
}

void print(const char* what, const ScoreAgreement& a) {
  std::printf("BART generate vs HF, %s: %d of %d sequences_scores bit-equal, largest difference %.3g\n", what,
              a.equal, a.total, a.worst);
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

}  // namespace
}  // namespace strata::gen
