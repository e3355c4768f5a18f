#include "generate/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace strata::gen {

namespace {
constexpr double kRemoved = -std::numeric_limits<double>::infinity();
}  // namespace

// Host memory (decoders return their logits there): the first of equal maxima, as
// torch.argmax and kernels::argmax_rows.
template <typename T>
int32_t argmax(const T* logits, int V) {
  return static_cast<int32_t>(std::max_element(logits, logits + V) - logits);
}

void apply_warpers(std::vector<double>& s, const Warpers& w) {
  const size_t V = s.size();
  if (w.temperature != 1.0)
    for (double& x : s) x /= w.temperature;
  if (w.top_k > 0 && static_cast<size_t>(w.top_k) < V) {
    std::vector<double> sorted = s;
    std::nth_element(sorted.begin(), sorted.begin() + (w.top_k - 1), sorted.end(), std::greater<>());
    const double kth = sorted[w.top_k - 1];
    for (double& x : s)
      if (x < kth) x = kRemoved;
  }
  if (w.top_p < 1.0) {
    std::vector<size_t> order(V);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s[a] < s[b]; });
    const double mx = s[order.back()];
    double total = 0;
    for (double x : s) total += std::exp(x - mx);
    // Cumulative probability from the least likely up; the last (largest) entry is always kept.
    double cum = 0;
    for (size_t r = 0; r + 1 < V; ++r) {
      const size_t i = order[r];
      cum += std::exp(s[i] - mx) / total;
      if (cum <= 1.0 - w.top_p) s[i] = kRemoved;
    }
  }
}

int32_t sample_index(const std::vector<double>& s, double u) {
  const double mx = *std::max_element(s.begin(), s.end());
  double total = 0;
  for (double x : s) total += std::exp(x - mx);
  const double target = u * total;
  double cum = 0;
  int32_t last_kept = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == kRemoved) continue;
    cum += std::exp(s[i] - mx);
    last_kept = static_cast<int32_t>(i);
    if (cum > target) return last_kept;
  }
  return last_kept;  // u * total rounded past the last partial sum
}

template int32_t argmax<float>(const float*, int);
template int32_t argmax<double>(const double*, int);

}  // namespace strata::gen
