// Beam search (generate/beam_search.h): its bookkeeping, and the length processors (forced
// bos / eos, min length) in it, on a decoder whose logits are a fixed table
// (tests/markov_decoder.h), where every step is worked out by hand in the comments, and
// parity with HF's generate() on the tiny GPT-2 fixture in float64 with both decoders
// (tests/fixtures/gpt2-causal-lm.beam.json, made by tests/fixtures/make_fixtures_beam.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generate/beam_search.h"
#include "generate/generator.h"
#include "kernels/ops.h"
#include "markov_decoder.h"
#include "models/causal_decoder.h"
#include "models/pretrained.h"
#include "test_util_fs.h"

namespace strata::gen {
namespace {

using ids = std::vector<int32_t>;
using nlohmann::json;

// Scores are float32 (as HF's): a hand-worked value in double is within float rounding.
constexpr double kFloatTol = 2e-6;

GenerationConfig beams(int K, int max_new, double length_penalty, EarlyStopping es, int returned) {
  GenerationConfig g;
  g.num_beams = K;
  g.max_new_tokens = max_new;
  g.length_penalty = length_penalty;
  g.early_stopping = es;
  g.num_return_sequences = returned;
  g.eos_token_ids = {3};
  g.validate("");
  return g;
}

// Tokens 0..3, eos 3, prompt ending in 0, two beams (four candidates kept per step).
//   step 0: beam 0 only (the duplicate starts at -1e9): 1 (ln .5), 2 (ln .35), 3, 0.
//           3 (eos) ranks third, below num_beams: dropped. Running: [1] -0.693, [2] -1.050.
//   step 1: [2]+3 = -1.155, [1]+3 = -1.609, [1]+1 = -1.897, [1]+2 = -2.079, ...
//           the two best both end in eos: hypotheses [2 3] and [1 3], scored / 2^lp.
//           Running: [1 1] and [1 2], both from row 0 (the decoder's rows become 0, 0).
// Greedy search takes 1 then 3: beam search finds [2 3], whose probability is higher.
test::MarkovDecoder scenario_a() {
  return test::MarkovDecoder({{.05, .5, .35, .10}, {.05, .30, .25, .40}, {.02, .03, .05, .90}, {.25, .25, .25, .25}});
}
const double kA23 = std::log(.35) + std::log(.9), kA13 = std::log(.5) + std::log(.4);
const double kA123 = std::log(.5) + std::log(.25) + std::log(.9), kA113 = std::log(.5) + std::log(.3) + std::log(.4);

void expect_hypotheses(const std::vector<Generated>& got, const std::vector<ids>& want_ids,
                       const std::vector<double>& want_scores) {
  ASSERT_EQ(got.size(), want_ids.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].ids, want_ids[i]) << "hypothesis " << i;
    ASSERT_TRUE(got[i].score.has_value());
    EXPECT_NEAR(*got[i].score, want_scores[i], kFloatTol) << "hypothesis " << i;
    EXPECT_EQ(got[i].finish, got[i].ids.back() == 3 ? FinishReason::EosToken : FinishReason::Length);
  }
}

TEST(BeamSearch, FindsTheLikelierSequenceGreedySearchMisses) {
  test::MarkovDecoder dec = scenario_a();
  GenerationConfig greedy;
  greedy.max_new_tokens = 3;
  greedy.eos_token_ids = {3};
  EXPECT_EQ(generate(dec, {0}, greedy, 4, 100, 0)[0].ids, (ids{1, 3}));
  // early_stopping false, step 1: both hypotheses kept; the best running beam at its length,
  // -1.897 / 2, cannot beat the worse, -1.609 / 2: done.
  expect_hypotheses(generate(dec, {0}, beams(2, 3, 1.0, EarlyStopping::Heuristic, 2), 4, 100, 0), {{2, 3}, {1, 3}},
                    {kA23 / 2, kA13 / 2});
  // true: two hypotheses are all it waits for.
  expect_hypotheses(generate(dec, {0}, beams(2, 3, 1.0, EarlyStopping::OnceNumBeamsDone, 2), 4, 100, 0),
                    {{2, 3}, {1, 3}}, {kA23 / 2, kA13 / 2});
  // num_return_sequences 1 is the best of them.
  expect_hypotheses(generate(dec, {0}, beams(2, 3, 1.0, EarlyStopping::Heuristic, 1), 4, 100, 0), {{2, 3}},
                    {kA23 / 2});
}

// "never" with length_penalty > 0 scores the best running beam at max_new_tokens: -1.897 / 3
// beats -1.609 / 2, so step 2 runs. It is the last (max_new_tokens 3): the two best candidates,
// [1 2 3] (row 1 holds 0 1 2 after the reorder) and [1 1 3], finish and join by score.
TEST(BeamSearch, NeverSearchesOnWhileALongerHypothesisCouldWin) {
  test::MarkovDecoder dec = scenario_a();
  expect_hypotheses(generate(dec, {0}, beams(2, 3, 1.0, EarlyStopping::Never, 2), 4, 100, 0), {{2, 3}, {1, 2, 3}},
                    {kA23 / 2, kA123 / 3});
  // The decoder's rows followed the beams: both continued row 0 ([0 1]) at step 1.
  EXPECT_EQ(dec.rows(), (std::vector<ids>{{0, 1, 1}, {0, 1, 2}}));
  // length_penalty 2 favours length more: the three-token hypothesis comes first.
  expect_hypotheses(generate(dec, {0}, beams(2, 3, 2.0, EarlyStopping::Never, 2), 4, 100, 0), {{1, 2, 3}, {2, 3}},
                    {kA123 / 9, kA23 / 4});
  // With false the same length_penalty stops at step 1 (-1.897 / 4 < -1.609 / 4).
  expect_hypotheses(generate(dec, {0}, beams(2, 3, 2.0, EarlyStopping::Heuristic, 2), 4, 100, 0), {{2, 3}, {1, 3}},
                    {kA23 / 4, kA13 / 4});
  // length_penalty 0 under "never" takes the current length, as false does.
  expect_hypotheses(generate(dec, {0}, beams(2, 3, 0.0, EarlyStopping::Never, 2), 4, 100, 0), {{2, 3}, {1, 3}},
                    {kA23, kA13});
  EXPECT_LT(kA113, kA123);  // [1 1 3], the other finalist, ranks below both
}

// Tokens 0..3, eos 3, two beams:
//   step 0: 1 (ln .45), 3 (ln .40) -> hypothesis [3], -0.916; running [1] -0.799, [2] -2.303.
//   step 1: [1]+1 = -1.492, [1]+3 = -1.715 -> hypothesis [1 3], -0.858; [2]+3 = -2.660 ranks
//           third: dropped. Two hypotheses kept; running [1 1] -1.492, [1 2] -3.612.
//   true stops here. false: -1.492 / 2 = -0.746 beats the worse hypothesis, -0.916: step 2,
//   the last, where [1 1 1] (-2.185 / 3, no eos: finish "length") and [1 1 3] (-2.408 / 3)
//   finish and push both earlier hypotheses out.
TEST(BeamSearch, EarlyStoppingTrueStopsAtNumBeamsHypotheses) {
  test::MarkovDecoder dec({{.05, .45, .10, .40}, {.04, .50, .06, .40}, {.1, .1, .1, .7}, {.25, .25, .25, .25}});
  const double h3 = std::log(.4), h13 = std::log(.45) + std::log(.4);
  const double h111 = std::log(.45) + 2 * std::log(.5), h113 = std::log(.45) + std::log(.5) + std::log(.4);
  expect_hypotheses(generate(dec, {0}, beams(2, 3, 1.0, EarlyStopping::OnceNumBeamsDone, 2), 4, 100, 0),
                    {{1, 3}, {3}}, {h13 / 2, h3});
  for (EarlyStopping es : {EarlyStopping::Heuristic, EarlyStopping::Never})
    expect_hypotheses(generate(dec, {0}, beams(2, 3, 1.0, es, 2), 4, 100, 0), {{1, 1, 1}, {1, 1, 3}},
                      {h111 / 3, h113 / 3});
}

// Only the num_beams best candidates of a step can finish (HF's top_num_beam_mask): [3] at
// step 0 ranks third (ln .2 after 1 and 2) and is dropped, although with length_penalty 0 its
// score, -1.609, beats both hypotheses returned at max_new_tokens 2.
TEST(BeamSearch, AFinishingCandidateBelowNumBeamsIsDropped) {
  test::MarkovDecoder dec({{.05, .40, .35, .20}, {.1, .2, .3, .4}, {.1, .2, .3, .4}, {.25, .25, .25, .25}});
  const double h13 = std::log(.4) + std::log(.4), h23 = std::log(.35) + std::log(.4);
  EXPECT_LT(h13, std::log(.2));
  expect_hypotheses(generate(dec, {0}, beams(2, 2, 0.0, EarlyStopping::Heuristic, 2), 4, 100, 0), {{1, 3}, {2, 3}},
                    {h13, h23});
}

// Two eos ids (2 and 3) keep (1 + 2) * 2 = 6 candidates per step, so that two beams run on
// even when the four best candidates all end in eos. length_penalty 2, "never", 3 new tokens:
//   step 0: 3 (ln .37) and 2 (ln .33) finish; running [1] -1.609, [0] -2.303; -1.609 / 3^2
//           beats the worse hypothesis: go on.
//   step 1: [1 3] -2.477, [1 2] -2.577, [0 3], [0 2] all end in eos; the two best finish
//           (-2.477 / 4 and -2.577 / 4 push out [3] and [2]); [1 1] -3.730 and [0 1] run on.
//   step 2: [1 1 3] -4.598 / 9 and [1 1 2] -4.698 / 9 beat both hypotheses of step 1.
// Keeping only 2 * num_beams candidates would have stopped at step 1 with [1 3] and [1 2].
TEST(BeamSearch, EveryEosIdWidensTheCandidatesKept) {
  test::MarkovDecoder dec({{.1, .2, .33, .37}, {.08, .12, .38, .42}, {.25, .25, .25, .25}, {.25, .25, .25, .25}});
  GenerationConfig g = beams(2, 3, 2.0, EarlyStopping::Never, 2);
  g.eos_token_ids = {2, 3};
  const double h113 = std::log(.2) + std::log(.12) + std::log(.42), h112 = std::log(.2) + std::log(.12) + std::log(.38);
  const auto out = generate(dec, {0}, g, 4, 100, 0);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].ids, (ids{1, 1, 3}));
  EXPECT_EQ(out[1].ids, (ids{1, 1, 2}));
  EXPECT_NEAR(*out[0].score, h113 / 9, kFloatTol);
  EXPECT_NEAR(*out[1].score, h112 / 9, kFloatTol);
  EXPECT_EQ(out[1].finish, FinishReason::EosToken);  // 2 is an eos id too
}

// The length penalty counts new tokens only (HF since 4.36): a longer prompt ending in the same
// token gives the same hypotheses with the same scores.
TEST(BeamSearch, LengthsCountTheNewTokensNotThePrompt) {
  test::MarkovDecoder dec = scenario_a();
  for (double lp : {0.6, 1.0, 2.0}) {
    const GenerationConfig g = beams(2, 3, lp, EarlyStopping::Never, 2);
    const auto short_prompt = generate(dec, {0}, g, 4, 100, 0), long_prompt = generate(dec, {2, 1, 2, 0}, g, 4, 100, 0);
    ASSERT_EQ(short_prompt.size(), long_prompt.size());
    for (size_t i = 0; i < short_prompt.size(); ++i) {
      EXPECT_EQ(long_prompt[i].ids, short_prompt[i].ids);
      EXPECT_EQ(*long_prompt[i].score, *short_prompt[i].score);
    }
  }
}

TEST(BeamSearch, NoRepeatNgramHoldsForEveryHypothesis) {
  test::MarkovDecoder dec({{.6, .1, .1, .1, .1}, {.1, .6, .1, .1, .1}, {.1, .1, .6, .1, .1}, {.1, .1, .1, .6, .1},
                           {.1, .1, .1, .1, .6}});
  GenerationConfig g = beams(3, 8, 1.0, EarlyStopping::Heuristic, 3);
  g.eos_token_ids = {};
  g.no_repeat_ngram_size = 2;
  for (const Generated& h : generate(dec, {0}, g, 5, 100, 0)) {
    ids all = {0};
    all.insert(all.end(), h.ids.begin(), h.ids.end());
    EXPECT_EQ(all.size(), 9u);  // no eos: every hypothesis runs to max_new_tokens
    for (size_t i = 0; i + 1 < all.size(); ++i)
      for (size_t j = i + 1; j + 1 < all.size(); ++j)
        EXPECT_FALSE(all[i] == all[j] && all[i + 1] == all[j + 1]) << "bigram at " << i << " and " << j;
  }
}

// forced_eos_token_id at the last step (max_new_tokens 2 after a one-token prompt, so at a
// sequence of two): each beam's only candidate is eos with log-probability 0, so the hypotheses
// keep their first step's score:
//   step 0: running [1] ln .5, [2] ln .35 (as in scenario_a)
//   step 1: [1 3] = ln .5 and [2 3] = ln .35, scored / 2: [1 3] first.
// Unforced, the same search returns [2 3] (ln .35 + ln .9) first, then [1 3] (ln .5 + ln .4).
TEST(BeamSearch, ForcedEosEndsEveryHypothesisAtMaxLength) {
  test::MarkovDecoder dec = scenario_a();
  GenerationConfig g = beams(2, 2, 1.0, EarlyStopping::Heuristic, 2);
  expect_hypotheses(generate(dec, {0}, g, 4, 100, 0), {{2, 3}, {1, 3}}, {kA23 / 2, kA13 / 2});
  g.forced_eos_token_ids = {3};
  expect_hypotheses(generate(dec, {0}, g, 4, 100, 0), {{1, 3}, {2, 3}}, {std::log(.5) / 2, std::log(.35) / 2});
}

// forced_bos_token_id 2 after the one-token prompt: beam 0's only candidate is 2 (log-prob 0),
// the duplicate beam's is 2 at -1e9. Step 1: [2 3] (ln .9) is the best candidate and finishes;
// [2 2] and [2 1] run on. Step 2, the last: [2 2 3] = ln .05 + ln .9 and [2 1 3] = ln .03 + ln .4
// finish; [2 3] and [2 2 3] are kept.
TEST(BeamSearch, ForcedBosStartsEveryHypothesis) {
  test::MarkovDecoder dec = scenario_a();
  GenerationConfig g = beams(2, 3, 1.0, EarlyStopping::OnceNumBeamsDone, 2);
  g.forced_bos_token_id = 2;
  expect_hypotheses(generate(dec, {0}, g, 4, 100, 0), {{2, 3}, {2, 2, 3}},
                    {std::log(.9) / 2, (std::log(.05) + std::log(.9)) / 3});
  // A two-token prompt is past HF's cur_len == 1: nothing is forced.
  const auto forced = generate(dec, {1, 0}, g, 4, 100, 0);
  g.forced_bos_token_id.reset();
  const auto free = generate(dec, {1, 0}, g, 4, 100, 0);
  ASSERT_EQ(forced.size(), free.size());
  for (size_t i = 0; i < free.size(); ++i) EXPECT_EQ(forced[i].ids, free[i].ids);
}

// min_new_tokens 2 bans eos at steps 0 and 1 (sequences of 1 and 2 < min_length 3):
//   step 1: [1 1] ln .5 + ln .3 and [1 2] ln .5 + ln .25 run on ([2 3] and [1 3] are banned).
//   step 2 (the last): [1 2 3] and [1 1 3] finish, the two hypotheses of scenario_a's "never".
TEST(BeamSearch, MinNewTokensKeepsEosBack) {
  test::MarkovDecoder dec = scenario_a();
  GenerationConfig g = beams(2, 3, 1.0, EarlyStopping::Heuristic, 2);
  g.min_new_tokens = 2;
  expect_hypotheses(generate(dec, {0}, g, 4, 100, 0), {{1, 2, 3}, {1, 1, 3}}, {kA123 / 3, kA113 / 3});
  // min_length counts the prompt: 3 with a one-token prompt is the same rule.
  g.min_new_tokens.reset();
  g.min_length = 3;
  expect_hypotheses(generate(dec, {0}, g, 4, 100, 0), {{1, 2, 3}, {1, 1, 3}}, {kA123 / 3, kA113 / 3});
}

TEST(BeamSearch, LogSoftmaxIsFloat32OfTheFloat32Logits) {
  const std::vector<double> logits = {1.0, 2.0, 3.0, -1e300};  // -1e300 is -inf in float32
  std::vector<float> out(4);
  log_softmax_f32(logits.data(), 4, out.data());
  const double lse = 3.0 + std::log(std::exp(-2.0) + std::exp(-1.0) + 1.0);
  EXPECT_EQ(out[0], static_cast<float>(1.0 - lse));
  EXPECT_EQ(out[2], static_cast<float>(3.0 - lse));
  EXPECT_EQ(out[3], -std::numeric_limits<float>::infinity());
}

// ---- HF parity --------------------------------------------------------------------------------

const json& beam_fixture() {
  static const json fixture = [] {
    std::ifstream in(test::fixture("gpt2-causal-lm.beam.json"));
    return json::parse(in);
  }();
  return fixture;
}

GenerationConfig config_of(const json& c) {
  GenerationConfig g;
  g.max_new_tokens = c["max_new_tokens"].get<int>();
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
  g.repetition_penalty = c.value("repetition_penalty", 1.0);
  const json& eos = c["eos_token_id"];
  g.eos_token_ids = eos.is_array() ? eos.get<ids>() : ids{eos.get<int32_t>()};
  g.validate("");
  return g;
}

// How a run's scores compare with HF's.
struct ScoreAgreement {
  double worst = 0;  // largest |strata - HF|
  int equal = 0, total = 0;
};

// Every case: the same tokens as HF, and its sequences_scores within `rel_tol` of their size.
// The parity runs use one thread: these products are tiny, and OpenMP's fork/join on a busy
// machine would cost more than the work (results are the same for any thread count).
template <typename T>
ScoreAgreement expect_hf_cases(bool use_cache, double rel_tol) {
  const int threads = kernels::num_threads();
  kernels::set_num_threads(1);
  const auto m = load_pretrained<T>(test::fixture("gpt2-causal-lm"));
  const ModelConfig& cfg = m->config();
  const auto dec = make_causal_decoder(*m, use_cache);
  ScoreAgreement a;
  uint64_t index = 0;
  for (const json& c : beam_fixture()["cases"]) {
    const GenerationConfig g = config_of(c);
    const auto prompt = c["prompt"].get<ids>();
    SCOPED_TRACE(c.dump().substr(0, 240));
    const auto out = generate(*dec, prompt, g, cfg.vocab_size, cfg.max_position_embeddings, index++);
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
  std::printf("beam search vs HF, %s: %d of %d sequences_scores bit-equal, largest difference %.3g\n", what, a.equal,
              a.total, a.worst);
}

// The float64 model: its logits round to the same float32 values as HF's, so the scores differ
// only by the log_softmax's rounding (HF's sums in its vector width's order, strata's in
// double): a few float32 ulps (2^-23 of the size is one).
TEST(BeamSearchHfParity, Fp64SequencesAndScoresEqualHfGenerate) {
  ASSERT_GE(beam_fixture()["cases"].size(), 60u);
  print("fp64 model, kv cache", expect_hf_cases<double>(true, 5e-7));
  print("fp64 model, recompute", expect_hf_cases<double>(false, 5e-7));
}

// The float32 model (what `strata generate` runs): its logits are not HF's float64 ones rounded,
// and their rounding depends on the instruction set the matrix products use, but by about 1e-7
// of their size, far inside the margins the fixture guarantees: the tokens agree, the scores
// to 1e-5 of their size.
TEST(BeamSearchHfParity, Fp32SequencesEqualHfGenerate) {
  print("fp32 model, kv cache", expect_hf_cases<float>(true, 1e-5));
}

}  // namespace
}  // namespace strata::gen
