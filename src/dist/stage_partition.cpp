#include "dist/stage_partition.h"

#include <algorithm>
#include <limits>

#include "util/error.h"

namespace strata::dist {

std::vector<int> balance_stages(const std::vector<double>& costs, int stages, double first_extra, double last_extra) {
  const int n = static_cast<int>(costs.size());
  STRATA_CHECK(stages >= 1 && stages <= n, "balance_stages: ", stages, " stages for ", n, " layers");
  std::vector<double> prefix(static_cast<size_t>(n) + 1, 0.0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + costs[i];
  auto cost = [&](int s, int from, int to) {  // stage s holding layers [from, to)
    return prefix[to] - prefix[from] + (s == 0 ? first_extra : 0.0) + (s == stages - 1 ? last_extra : 0.0);
  };
  // best[s][j]: the smallest largest-stage cost of stages 0..s holding layers [0, j); cut[s][j]
  // where stage s starts. Tiny sizes (layers, stages < 100): O(stages * n^2) is nothing.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(stages, std::vector<double>(static_cast<size_t>(n) + 1, kInf));
  std::vector<std::vector<int>> cut(stages, std::vector<int>(static_cast<size_t>(n) + 1, 0));
  for (int j = 1; j <= n; ++j) best[0][j] = cost(0, 0, j);
  for (int s = 1; s < stages; ++s)
    for (int j = s + 1; j <= n; ++j)
      // Scanning starts from the right, and only a strictly better split replaces the one
      // found: ties keep the latest start of stage s, i.e. more layers on earlier stages.
      for (int i = j - 1; i >= s; --i) {
        const double v = std::max(best[s - 1][i], cost(s, i, j));
        if (v < best[s][j]) {
          best[s][j] = v;
          cut[s][j] = i;
        }
      }
  std::vector<int> sizes(static_cast<size_t>(stages));
  int end = n;
  for (int s = stages - 1; s > 0; --s) {
    sizes[s] = end - cut[s][end];
    end = cut[s][end];
  }
  sizes[0] = end;
  return sizes;
}

std::vector<int> even_stages(int layers, int stages) {
  STRATA_CHECK(stages >= 1 && stages <= layers, "even_stages: ", stages, " stages for ", layers, " layers");
  std::vector<int> sizes(static_cast<size_t>(stages), layers / stages);
  for (int s = 0; s < layers % stages; ++s) ++sizes[s];
  return sizes;
}

}  // namespace strata::dist
