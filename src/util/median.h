// The median of a non-empty list (the mean of the two middle values for an even count): what
// the benchmarks, the unit profiles and the study tables report of repeated timings.
#pragma once
#include <algorithm>
#include <vector>

namespace strata {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace strata
