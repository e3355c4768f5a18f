#include "generate/logits_processors.h"

#include <algorithm>
#include <limits>

namespace strata::gen {

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
}

template void apply_logits_processors<float>(const LogitsProcessors&, const std::vector<int32_t>&, float*, int);
template void apply_logits_processors<double>(const LogitsProcessors&, const std::vector<int32_t>&, double*, int);

}  // namespace strata::gen
