// generate/logits_processors: HF's NoRepeatNGramLogitsProcessor, RepetitionPenaltyLogitsProcessor,
// MinLength / MinNewTokensLength and ForcedBOS / ForcedEOSTokenLogitsProcessor on hand-worked
// sequences, and the processors in greedy search and sampling over a decoder whose logits are a
// fixed table. (Beam search with them: tests/test_beam_search.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "generate/generator.h"
#include "generate/logits_processors.h"
#include "markov_decoder.h"
#include "util/error.h"

namespace strata::gen {
namespace {

TEST(NoRepeatNgram, BansTheTokensThatWouldCompleteASeenNgram) {
  using ids = std::vector<int32_t>;
  // n = 3: the last two tokens (1, 2) began the trigram 1 2 3.
  EXPECT_EQ(banned_ngram_tokens({1, 2, 3, 1, 2}, 3), ids{3});
  // n = 2: the last token 2 began the bigram 2 3.
  EXPECT_EQ(banned_ngram_tokens({1, 2, 3, 1, 2}, 2), ids{3});
  EXPECT_EQ(banned_ngram_tokens({1, 2, 1, 2}, 2), ids{1});
  // Every bigram that starts with the last token bans its second token (repeats kept, as HF's scatter).
  EXPECT_EQ(banned_ngram_tokens({5, 5, 5}, 2), (ids{5, 5}));
  EXPECT_EQ(banned_ngram_tokens({4, 7, 4, 9, 4}, 2), (ids{7, 9}));
  // A sequence of exactly n tokens: its one n-gram is banned when it starts with the last n-1.
  EXPECT_EQ(banned_ngram_tokens({4, 4}, 2), ids{4});
  EXPECT_EQ(banned_ngram_tokens({4, 6}, 2), ids{});
  // Shorter than n: no n-gram yet.
  EXPECT_EQ(banned_ngram_tokens({4, 4}, 3), ids{});
  // n = 1: every token seen.
  EXPECT_EQ(banned_ngram_tokens({3, 1, 3}, 1), (ids{3, 1, 3}));
  // No match anywhere.
  EXPECT_EQ(banned_ngram_tokens({1, 2, 3, 4}, 2), ids{});
}

TEST(LogitsProcessors, RepetitionPenaltyOncePerTokenThenNgramBan) {
  std::vector<double> s = {2.0, -1.0, 0.5, -3.0, 4.0};
  LogitsProcessors p;
  p.repetition_penalty = 2.0;
  // Tokens 0 and 1 occur (1 twice: penalized once); positive scores are divided, negative multiplied.
  apply_logits_processors(p, {0, 1, 1}, s.data(), 5);
  EXPECT_EQ(s, (std::vector<double>{1.0, -2.0, 0.5, -3.0, 4.0}));
  // Both: the penalty first (HF's order), then the bigram 1 -> 4 seen before bans 4.
  std::vector<float> f = {2.0f, -1.0f, 0.5f, -3.0f, 4.0f};
  p.no_repeat_ngram_size = 2;
  apply_logits_processors(p, {1, 4, 1}, f.data(), 5);
  EXPECT_EQ(f, (std::vector<float>{2.0f, -2.0f, 0.5f, -3.0f, -std::numeric_limits<float>::infinity()}));
  EXPECT_FALSE(LogitsProcessors{}.active());
}

// Greedy search would cycle 1 0 1 0 ...; with no_repeat_ngram_size 2 the bigram 0 1 may not
// come back, so after 0 1 0 it takes 0's second choice, 2, then 2's best, 3, then 3's best, 0.
TEST(LogitsProcessors, NoRepeatNgramSteersGreedySearch) {
  test::MarkovDecoder dec({{.1, .6, .2, .1}, {.6, .1, .2, .1}, {.1, .1, .1, .7}, {.5, .2, .2, .1}});
  GenerationConfig g;
  g.max_new_tokens = 5;
  EXPECT_EQ(generate(dec, {0}, g, 4, 100, 0)[0].ids, (std::vector<int32_t>{1, 0, 1, 0, 1}));
  g.no_repeat_ngram_size = 2;
  EXPECT_EQ(generate(dec, {0}, g, 4, 100, 0)[0].ids, (std::vector<int32_t>{1, 0, 2, 3, 0}));
  // The prompt counts too (HF passes the whole input_ids): after prompt 0 1 0, 1 is banned at once.
  EXPECT_EQ(generate(dec, {0, 1, 0}, g, 4, 100, 0)[0].ids.front(), 2);
}

// Sampling from a table that favours repeating: no sampled sequence repeats a bigram. (Nine
// tokens make eight bigrams, so no token starts more than five and none runs out of successors.)
TEST(LogitsProcessors, NoRepeatNgramHoldsForEverySampledSequence) {
  test::MarkovDecoder dec({{.6, .1, .1, .1, .1}, {.1, .6, .1, .1, .1}, {.1, .1, .6, .1, .1}, {.1, .1, .1, .6, .1},
                           {.1, .1, .1, .1, .6}});
  GenerationConfig g;
  g.do_sample = true;
  g.top_k = 0;
  g.max_new_tokens = 8;
  g.num_return_sequences = 4;
  g.no_repeat_ngram_size = 2;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    g.seed = seed;
    for (const Generated& s : generate(dec, {0}, g, 5, 100, 0)) {
      std::vector<int32_t> all = {0};
      all.insert(all.end(), s.ids.begin(), s.ids.end());
      std::set<std::pair<int32_t, int32_t>> bigrams;
      for (size_t i = 0; i + 1 < all.size(); ++i)
        EXPECT_TRUE(bigrams.insert({all[i], all[i + 1]}).second) << "seed " << seed << " repeats a bigram at " << i;
    }
  }
}

// ---- length rules: min_length / min_new_tokens, forced_bos_token_id, forced_eos_token_id ----

constexpr double kInf = std::numeric_limits<double>::infinity();

// Eos ids are banned while the sequence (prompt included) is shorter than min_length; an eos id
// outside the vocabulary bans nothing.
TEST(LogitsProcessors, MinLengthBansEosWhileTheSequenceIsShorter) {
  LogitsProcessors p;
  p.min_length = 4;
  p.eos_token_ids = {3, 1, 99};
  std::vector<double> s = {0.5, 1.0, 2.0, 3.0};
  apply_logits_processors(p, {0, 2, 2}, s.data(), 4);  // 3 tokens < 4
  EXPECT_EQ(s, (std::vector<double>{0.5, -kInf, 2.0, -kInf}));
  s = {0.5, 1.0, 2.0, 3.0};
  apply_logits_processors(p, {0, 2, 2, 2}, s.data(), 4);  // 4 tokens: eos allowed
  EXPECT_EQ(s, (std::vector<double>{0.5, 1.0, 2.0, 3.0}));
  p.eos_token_ids = {};  // HF adds the processor only with an eos id
  EXPECT_FALSE(p.active());
}

// A sequence of one token (HF's cur_len == 1: an encoder-decoder's start token, or a one-token
// prompt) may only continue with forced_bos_token_id, scored 0.
TEST(LogitsProcessors, ForcedBosOnlyAfterASingleToken) {
  LogitsProcessors p;
  p.forced_bos_token_id = 2;
  std::vector<float> s = {0.5f, -1.0f, -7.0f, 3.0f};
  apply_logits_processors(p, {1}, s.data(), 4);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(s, (std::vector<float>{-inf, -inf, 0.0f, -inf}));
  s = {0.5f, -1.0f, -7.0f, 3.0f};
  apply_logits_processors(p, {1, 0}, s.data(), 4);
  EXPECT_EQ(s, (std::vector<float>{0.5f, -1.0f, -7.0f, 3.0f}));
}

// At the last position max_length allows (a sequence of max_length - 1 tokens), only the forced
// eos ids are left, each scored 0; it overrides the other processors, min_length's ban included.
TEST(LogitsProcessors, ForcedEosAtTheLastPositionWinsOverEverything) {
  LogitsProcessors p;
  p.max_length = 4;
  p.forced_eos_token_ids = {3, 1};
  p.min_length = 10;
  p.eos_token_ids = {3};
  p.repetition_penalty = 2.0;
  std::vector<double> s = {0.5, 1.0, 2.0, 3.0};
  apply_logits_processors(p, {0, 2}, s.data(), 4);  // 2 tokens: the penalty and the eos ban only
  EXPECT_EQ(s, (std::vector<double>{0.25, 1.0, 1.0, -kInf}));
  s = {0.5, 1.0, 2.0, 3.0};
  apply_logits_processors(p, {0, 2, 2}, s.data(), 4);
  EXPECT_EQ(s, (std::vector<double>{-kInf, 0.0, -kInf, 0.0}));
  // Both forcings at once (max_length 2, one token so far): eos comes later in HF's list and wins.
  p.max_length = 2;
  p.forced_bos_token_id = 2;
  s = {0.5, 1.0, 2.0, 3.0};
  apply_logits_processors(p, {0}, s.data(), 4);
  EXPECT_EQ(s, (std::vector<double>{-kInf, 0.0, -kInf, 0.0}));
}

// The lengths are resolved once per generation, as HF's _prepare_generated_length does:
// min_new_tokens counts after the prompt and wins over min_length; max_length is prompt + budget.
TEST(LogitsProcessors, LengthsResolvedFromTheConfigPromptAndBudget) {
  GenerationConfig g;
  g.eos_token_ids = {3};
  g.min_length = 5;
  g.forced_eos_token_ids = {3};
  LogitsProcessors p = logits_processors_for(g, 4, 6, 10);
  EXPECT_EQ(p.min_length, 5);
  EXPECT_EQ(p.max_length, 10);
  EXPECT_EQ(p.forced_eos_token_ids, std::vector<int32_t>{3});
  g.min_new_tokens = 2;
  EXPECT_EQ(logits_processors_for(g, 4, 6, 10).min_length, 6);
  g.forced_bos_token_id = 10;  // outside a vocabulary of 10
  EXPECT_THROW(logits_processors_for(g, 4, 6, 10), Error);
  g.forced_bos_token_id = 9;
  g.forced_eos_token_ids = {3, 12};
  try {
    logits_processors_for(g, 4, 6, 10);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("forced_eos_token_id 12 is not a token of the model's vocabulary "
                                         "(vocab_size 10)"),
              std::string::npos)
        << e.what();
  }
}

// Greedy search on a table whose likeliest continuation of 0 is eos (3): min_new_tokens holds
// eos back, forced bos fixes the first token of a one-token prompt, forced eos ends every
// sequence that reaches max_new_tokens.
//   0 -> 3 (.5), 1 (.3); 1 -> 2 (.6); 2 -> 1 (.7)
TEST(LogitsProcessors, LengthRulesSteerGreedySearch) {
  test::MarkovDecoder dec({{.05, .3, .15, .5}, {.1, .1, .6, .2}, {.1, .7, .1, .1}, {.25, .25, .25, .25}});
  GenerationConfig g;
  g.max_new_tokens = 5;
  g.eos_token_ids = {3};
  const auto ids_of = [&](const std::vector<int32_t>& prompt) { return generate(dec, prompt, g, 4, 100, 0)[0]; };
  EXPECT_EQ(ids_of({0}).ids, std::vector<int32_t>{3});
  g.min_new_tokens = 3;  // eos banned for the first three: 1 2 1, then 1's eos is still below 2
  EXPECT_EQ(ids_of({0}).ids, (std::vector<int32_t>{1, 2, 1, 2, 1}));
  EXPECT_EQ(ids_of({0}).finish, FinishReason::Length);
  g.forced_eos_token_ids = {3};  // the fifth token, the last allowed, is eos
  EXPECT_EQ(ids_of({0}).ids, (std::vector<int32_t>{1, 2, 1, 2, 3}));
  EXPECT_EQ(ids_of({0}).finish, FinishReason::EosToken);
  g.forced_bos_token_id = 2;  // after a one-token prompt the first token is 2
  EXPECT_EQ(ids_of({0}).ids, (std::vector<int32_t>{2, 1, 2, 1, 3}));
  // A two-token prompt is past HF's cur_len == 1: no forced bos; min_new_tokens counts after it.
  EXPECT_EQ(ids_of({1, 0}).ids, (std::vector<int32_t>{1, 2, 1, 2, 3}));
  // min_length counts the prompt: a three-token prompt may end at once, a two-token one not.
  g.min_new_tokens.reset();
  g.forced_bos_token_id.reset();
  g.min_length = 3;
  EXPECT_EQ(ids_of({2, 1, 0}).ids, std::vector<int32_t>{3});
  EXPECT_EQ(ids_of({1, 0}).ids, (std::vector<int32_t>{1, 2, 1, 2, 3}));
}

// Sampling obeys the same rules: every sequence starts with the forced bos, has no eos among
// its first min_new_tokens, and ends with eos (sampled, or forced at the last position).
TEST(LogitsProcessors, LengthRulesHoldForEverySampledSequence) {
  test::MarkovDecoder dec({{.05, .3, .15, .5}, {.1, .1, .6, .2}, {.1, .7, .1, .1}, {.25, .25, .25, .25}});
  GenerationConfig g;
  g.do_sample = true;
  g.top_k = 0;
  g.max_new_tokens = 6;
  g.num_return_sequences = 8;
  g.eos_token_ids = {3};
  g.min_new_tokens = 3;
  g.forced_bos_token_id = 0;
  g.forced_eos_token_ids = {3};
  int early = 0;
  for (const Generated& s : generate(dec, {1}, g, 4, 100, 0)) {
    ASSERT_GE(s.ids.size(), 4u);
    EXPECT_EQ(s.ids[0], 0);
    EXPECT_EQ(std::count(s.ids.begin(), s.ids.begin() + 3, 3), 0);
    EXPECT_EQ(s.ids.back(), 3);
    EXPECT_EQ(s.finish, FinishReason::EosToken);
    early += s.ids.size() < 6;
  }
  EXPECT_GT(early, 0);  // some sampled eos before the forced one
}

}  // namespace
}  // namespace strata::gen
