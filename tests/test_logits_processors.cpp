// generate/logits_processors: HF's NoRepeatNGramLogitsProcessor and
// RepetitionPenaltyLogitsProcessor on hand-worked sequences, and no_repeat_ngram_size in
// greedy search and sampling over a decoder whose logits are a fixed table.
#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <vector>

#include "generate/generator.h"
#include "generate/logits_processors.h"
#include "markov_decoder.h"

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
  // Tokens 0 and 1 occur (1 twice: penalized once); positive scores are divided, negative multiplied.
  apply_logits_processors(LogitsProcessors{2.0, 0}, {0, 1, 1}, s.data(), 5);
  EXPECT_EQ(s, (std::vector<double>{1.0, -2.0, 0.5, -3.0, 4.0}));
  // Both: the penalty first (HF's order), then the bigram 1 -> 4 seen before bans 4.
  std::vector<float> f = {2.0f, -1.0f, 0.5f, -3.0f, 4.0f};
  apply_logits_processors(LogitsProcessors{2.0, 2}, {1, 4, 1}, f.data(), 5);
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

}  // namespace
}  // namespace strata::gen
