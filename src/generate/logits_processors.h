// HF's logits processors that strata implements, applied in the order of HF's
// _get_logits_processor: RepetitionPenaltyLogitsProcessor, then NoRepeatNGramLogitsProcessor.
// They change one row of next-token scores given that row's whole sequence so far (prompt and
// generated tokens, as HF passes input_ids): the raw logits for greedy search and sampling
// (before the warpers), the log-softmax for beam search.
#pragma once
#include <cstdint>
#include <vector>

namespace strata::gen {

struct LogitsProcessors {
  double repetition_penalty = 1.0;  // != 1: every token of the sequence, once: s < 0 ? s * p : s / p
  int no_repeat_ngram_size = 0;     // > 0: tokens that would complete an n-gram already in the sequence get -inf
  bool active() const { return repetition_penalty != 1.0 || no_repeat_ngram_size > 0; }
};

// The tokens that would repeat an n-gram of `ids` if appended: the last token of every n-gram
// of `ids` whose first n-1 tokens are `ids`' last n-1 (for n = 1, every token of `ids`).
// Empty while `ids` is shorter than n.
std::vector<int32_t> banned_ngram_tokens(const std::vector<int32_t>& ids, int n);

// Applies p to scores[V] in place, for a row whose sequence so far is `ids` (ids < V). The
// penalty is multiplied or divided in the scores' own type (HF: float32 with float32(p)).
template <typename S>
void apply_logits_processors(const LogitsProcessors& p, const std::vector<int32_t>& ids, S* scores, int V);

}  // namespace strata::gen
