// T5 generation equal to HF's generate(): T5ForConditionalGeneration on the tiny fixtures
// tests/fixtures/t5-cond-gen (relu, tied and scaled head, decoder deeper than the encoder) and
// t5-v1_1-cond-gen (gated-gelu, lm_head of its own), greedy and beam search with min length, min
// new tokens, no_repeat_ngram_size and repetition_penalty, through make_seq2seq_decoder (T5's
// cached decoder and the recompute one). The fixtures (tests/fixtures/*.generate.json.gz) are
// made by tests/fixtures/make_fixtures_t5_generate.sh. Then sampling through the same decoders,
// which HF's generate cannot pin down (it draws from torch's global generator): seeded runs
// repeat, both decoders draw the same tokens, top_k 1 is greedy search.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hf_generate_cases.h"
#include "models/t5/t5_decoder.h"

namespace strata::gen {
namespace {

using ids = std::vector<int32_t>;
using nlohmann::json;

class T5GenerateHfParity : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { doc_ = test::read_json_fixture(GetParam() + ".generate.json.gz"); }
  const json& fixture() const { return doc_; }
  void print(const std::string& what, const test::ScoreAgreement& a) {
    test::print_score_agreement((GetParam() + " generate vs HF, " + what).c_str(), a);
  }

 private:
  json doc_;
};

std::string model_name(const testing::TestParamInfo<std::string>& i) {
  std::string n = i.param;
  for (char& ch : n)
    if (ch == '-') ch = '_';
  return n;
}

// The float64 model: its logits round to HF's float32 ones, so beam scores differ only by the
// log-softmax's rounding, as for GPT-2 and BART (the same tolerance).
TEST_P(T5GenerateHfParity, Fp64SequencesAndScoresEqualHfGenerate) {
  ASSERT_GE(fixture()["cases"].size(), 30u);
  const auto m = load_pretrained<double>(test::fixture(GetParam()));
  ASSERT_NE(dynamic_cast<T5Decoder<double>*>(make_seq2seq_decoder(*m, {1}, true).get()), nullptr);
  print("fp64 model, cached decoder", test::expect_hf_generate_cases<double>(GetParam(), fixture(), true, 5e-7));
  print("fp64 model, recompute", test::expect_hf_generate_cases<double>(GetParam(), fixture(), false, 5e-7));
}

// The float32 model (what `strata generate` and seq2seq evaluation run): the same tokens, the
// scores to 1e-5 of their size.
TEST_P(T5GenerateHfParity, Fp32SequencesEqualHfGenerate) {
  print("fp32 model, cached decoder", test::expect_hf_generate_cases<float>(GetParam(), fixture(), true, 1e-5));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, T5GenerateHfParity, testing::Values("t5-cond-gen", "t5-v1_1-cond-gen"),
                         model_name);

class T5Sampling : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { model_ = load_pretrained<double>(test::fixture(GetParam())); }

  // The model's generation config (eos 1) sampling 4 sequences of up to 12 new tokens through
  // all three warpers.
  GenerationConfig sampling(uint64_t seed) const {
    std::vector<std::string> ignored;
    GenerationConfig g = load_generation_config(test::fixture(GetParam()), &ignored);
    g.do_sample = true;
    g.temperature = 0.8;
    g.top_k = 20;
    g.top_p = 0.95;
    g.num_return_sequences = 4;
    g.max_new_tokens = 12;
    g.seed = seed;
    g.validate("");
    return g;
  }

  std::vector<ids> run(const GenerationConfig& g, bool use_cache) const {
    const ModelConfig& c = model_->config();
    const ids source = {23, 12, 28, 44, 6, 7, 55, 37, 9, 26, 40, 1};
    const auto decoder = make_seq2seq_decoder(*model_, source, use_cache);
    std::vector<ids> out;
    for (const Generated& s : generate(*decoder, {0}, g, c.vocab_size, c.max_position_embeddings, 0))
      out.push_back(s.ids);
    return out;
  }

  std::unique_ptr<Model<double>> model_;
};

// The draws are keyed by (seed, prompt, sequence, step), not by the decoder: the cached and the
// recompute decoder (whose fp64 logits agree to rounding, tests/test_t5.cpp) draw the same
// tokens, a rerun the same, another seed others; the sequences of one run draw their own.
TEST_P(T5Sampling, SeededDrawsRepeatAndBothDecodersDrawTheSame) {
  const std::vector<ids> drawn = run(sampling(42), true);
  ASSERT_EQ(drawn.size(), 4u);
  EXPECT_EQ(run(sampling(42), true), drawn);
  EXPECT_EQ(run(sampling(42), false), drawn);
  EXPECT_NE(run(sampling(43), true), drawn);
  EXPECT_GT(std::set<ids>(drawn.begin(), drawn.end()).size(), 1u);
}

// top_k 1 leaves one token to draw: sampling is greedy search, through either decoder.
TEST_P(T5Sampling, TopKOfOneIsGreedySearch) {
  GenerationConfig greedy = sampling(42);
  greedy.do_sample = false;
  greedy.num_return_sequences = 1;
  GenerationConfig top1 = sampling(42);
  top1.top_k = 1;
  top1.num_return_sequences = 1;
  for (bool use_cache : {true, false}) EXPECT_EQ(run(top1, use_cache), run(greedy, use_cache));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, T5Sampling, testing::Values("t5-cond-gen", "t5-v1_1-cond-gen"), model_name);

}  // namespace
}  // namespace strata::gen
