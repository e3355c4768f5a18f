#include "generate/logits_processors.h"

#include <algorithm>
#include <limits>

namespace strata::gen {

namespace {

// HF's forcing processors: every score -inf, then each forced id's 0.
template <typename S>
void force(S* scores, int V, const std::vector<int32_t>& ids) {
  std::fill(scores, scores + V, -std::numeric_limits<S>::infinity());
  for (int32_t id : ids) scores[id] = 0;
}

}  // namespace

LogitsProcessors logits_processors_for(const GenerationConfig& g, int prompt_len, int max_new_tokens, int vocab_size) {
  g.check_forced_ids(vocab_size, "generate: ");
  LogitsProcessors p;
  p.repetition_penalty = g.repetition_penalty;
  p.no_repeat_ngram_size = g.no_repeat_ngram_size;
  p.min_length = g.min_sequence_length(prompt_len);
  p.eos_token_ids = g.eos_token_ids;
  p.forced_bos_token_id = g.forced_bos_token_id;
  p.forced_eos_token_ids = g.forced_eos_token_ids;
  p.max_length = prompt_len + max_new_tokens;
  return p;
}

std::vector<int32_t> banned_ngram_tokens(const std::vector<int32_t>& ids, int n) {
  const size_t len = ids.size(), prefix = static_cast<size_t>(n) - 1;
  std::vector<int32_t> banned;
  if (n <= 0 || len < static_cast<size_t>(n)) return banned;
  // The n-gram starting at `start` is banned when its first n-1 tokens equal the last n-1 of ids
  // (the window ending at the sequence's end is one token short, so it never matches itself).
  for (size_t start = 0; start + n <= len; ++start)
    if (std::equal(ids.begin() + start, ids.begin() + start + prefix, ids.end() - prefix))
      banned.push_back(ids[start + prefix]);
  return banned;
}

template <typename S>
void apply_logits_processors(const LogitsProcessors& p, const std::vector<int32_t>& ids, S* scores, int V) {
  if (p.repetition_penalty != 1.0) {
    const S penalty = static_cast<S>(p.repetition_penalty);
    std::vector<bool> seen(static_cast<size_t>(V), false);
    for (int32_t id : ids) {
      if (seen[id]) continue;  // once per token, however often it occurs
      seen[id] = true;
      scores[id] = scores[id] < 0 ? scores[id] * penalty : scores[id] / penalty;
    }
  }
  if (p.no_repeat_ngram_size > 0)
    for (int32_t id : banned_ngram_tokens(ids, p.no_repeat_ngram_size))
      scores[id] = -std::numeric_limits<S>::infinity();
  const int len = static_cast<int>(ids.size());
  if (len < p.min_length)
    for (int32_t id : p.eos_token_ids)
      if (id < V) scores[id] = -std::numeric_limits<S>::infinity();
  if (p.forced_bos_token_id && len == 1) force(scores, V, {*p.forced_bos_token_id});
  if (!p.forced_eos_token_ids.empty() && len == p.max_length - 1) force(scores, V, p.forced_eos_token_ids);
}

template void apply_logits_processors<float>(const LogitsProcessors&, const std::vector<int32_t>&, float*, int);
template void apply_logits_processors<double>(const LogitsProcessors&, const std::vector<int32_t>&, double*, int);

}  // namespace strata::gen
