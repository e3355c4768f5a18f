#include "generate/beam_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "generate/logits_processors.h"
#include "util/error.h"

namespace strata::gen {

namespace {

// HF's score of the duplicate beams at the start; in float32, -1e9 plus any log-probability
// above -32 rounds back to -1e9.
constexpr float kUnreachable = -1.0e9f;

struct Beam {
  std::vector<int32_t> ids;  // prompt + new tokens (what the logits processors read)
  float score;               // sum of the new tokens' log-probabilities
};

struct Hypothesis {
  std::vector<int32_t> ids;  // new tokens only
  float score;               // sum of log-probabilities / new_tokens ^ length_penalty
};

// a / L^length_penalty as HF computes it: the power in double (Python's int ** float), the
// division in float32 (a float32 tensor divided by a Python float).
float length_normalized(float a, int L, double length_penalty) {
  return a / static_cast<float>(std::pow(static_cast<double>(L), length_penalty));
}

}  // namespace

template <typename T>
void log_softmax_f32(const T* logits, int V, float* out) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int v = 0; v < V; ++v) {
    out[v] = static_cast<float>(logits[v]);
    mx = std::max(mx, out[v]);
  }
  double sum = 0;
  for (int v = 0; v < V; ++v) sum += std::exp(static_cast<double>(out[v]) - mx);
  const double shift = mx + std::log(sum);
  for (int v = 0; v < V; ++v) out[v] = static_cast<float>(static_cast<double>(out[v]) - shift);
}

template <typename T>
std::vector<Generated> beam_search(CausalDecoder<T>& decoder, const std::vector<int32_t>& prompt,
                                   const GenerationConfig& g, int vocab_size, int max_new_tokens) {
  const int K = g.num_beams, V = vocab_size, P = static_cast<int>(prompt.size());
  const auto is_eos = [&](int32_t id) {
    return std::find(g.eos_token_ids.begin(), g.eos_token_ids.end(), id) != g.eos_token_ids.end();
  };
  const int W = std::max(2, 1 + static_cast<int>(g.eos_token_ids.size())) * K;
  STRATA_CHECK(K > 1 && P > 0 && max_new_tokens > 0, "beam search: needs num_beams > 1 (got ", K,
               "), a prompt (got ", P, " tokens) and new tokens (got ", max_new_tokens, ")");
  STRATA_CHECK(static_cast<long long>(K) * V >= W, "beam search: ", K, " beams over a vocabulary of ", V,
               " give fewer than the ", W, " candidates kept per step");
  const LogitsProcessors processors = logits_processors_for(g, P, max_new_tokens, V);

  std::vector<Beam> running(static_cast<size_t>(K), Beam{prompt, kUnreachable});
  running[0].score = 0;
  std::vector<Hypothesis> kept;  // best first, at most K
  std::vector<int32_t> feed;
  for (int k = 0; k < K; ++k) feed.insert(feed.end(), prompt.begin(), prompt.end());
  decoder.reset(K, P + max_new_tokens);
  const T* logits = decoder.append(feed.data(), P);

  std::vector<float> scores(static_cast<size_t>(K) * V);
  std::vector<int32_t> order(scores.size()), rows(static_cast<size_t>(K));
  std::vector<bool> finishes(static_cast<size_t>(W));
  for (int step = 0;; ++step) {
    for (int k = 0; k < K; ++k) {
      float* row = scores.data() + static_cast<size_t>(k) * V;
      log_softmax_f32(logits + static_cast<size_t>(k) * V, V, row);
      if (processors.active()) apply_logits_processors(processors, running[k].ids, row, V);
      for (int v = 0; v < V; ++v) row[v] += running[k].score;
    }
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + W, order.end(), [&](int32_t a, int32_t b) {
      return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
    });
    const bool at_max = step + 1 == max_new_tokens;
    for (int j = 0; j < W; ++j) finishes[j] = at_max || is_eos(order[j] % V);

    // The K best candidates that finish join the hypotheses; a tie keeps the earlier one first.
    for (int j = 0; j < K; ++j) {
      if (!finishes[j]) continue;
      const Beam& from = running[order[j] / V];
      Hypothesis h{std::vector<int32_t>(from.ids.begin() + P, from.ids.end()), 0};
      h.ids.push_back(order[j] % V);
      h.score = length_normalized(scores[order[j]], step + 1, g.length_penalty);
      const auto at = std::upper_bound(kept.begin(), kept.end(), h.score,
                                       [](float s, const Hypothesis& o) { return s > o.score; });
      kept.insert(at, std::move(h));
      if (kept.size() > static_cast<size_t>(K)) kept.pop_back();
    }
    if (std::all_of(finishes.begin(), finishes.end(), [](bool f) { return f; })) break;

    // The K best candidates that do not finish run on: there are K, as at most #eos * K of the W
    // candidates end in eos (one per beam and eos id) and the search stopped if all finished.
    std::vector<Beam> next;
    for (int j = 0; j < W && static_cast<int>(next.size()) < K; ++j) {
      if (finishes[j]) continue;
      const int32_t from = order[j] / V, token = order[j] % V;
      rows[next.size()] = from;
      next.push_back(Beam{running[from].ids, scores[order[j]]});
      next.back().ids.push_back(token);
    }
    running = std::move(next);

    const bool full = kept.size() == static_cast<size_t>(K);
    if (full && g.early_stopping == EarlyStopping::OnceNumBeamsDone) break;
    const int L = g.early_stopping == EarlyStopping::Never && g.length_penalty > 0 ? max_new_tokens : step + 1;
    if (full && !(length_normalized(running[0].score, L, g.length_penalty) > kept.back().score)) break;

    decoder.reorder(rows);
    feed.resize(static_cast<size_t>(K));
    for (int k = 0; k < K; ++k) feed[k] = running[k].ids.back();
    logits = decoder.append(feed.data(), 1);
  }

  // Every stop above leaves K hypotheses (at max_new_tokens the K best candidates all finish).
  std::vector<Generated> out;
  for (int i = 0; i < g.num_return_sequences; ++i) {
    Hypothesis& h = kept[i];
    const FinishReason finish = is_eos(h.ids.back()) ? FinishReason::EosToken : FinishReason::Length;
    out.push_back(Generated{std::move(h.ids), finish, h.score});
  }
  return out;
}

#define STRATA_INSTANTIATE(T)                                                                                    \
  template void log_softmax_f32<T>(const T*, int, float*);                                                     \
  template std::vector<Generated> beam_search<T>(CausalDecoder<T>&, const std::vector<int32_t>&,               \
                                                 const GenerationConfig&, int, int);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

}  // namespace strata::gen
