#include "models/t5/relative_position.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace strata {

int relative_position_bucket(int relative_position, bool bidirectional, int num_buckets, int max_distance) {
  int bucket = 0;
  int n;  // the distance, >= 0
  if (bidirectional) {
    num_buckets /= 2;
    if (relative_position > 0) bucket += num_buckets;
    n = std::abs(relative_position);
  } else {
    n = std::max(-relative_position, 0);
  }
  const int max_exact = num_buckets / 2;
  if (n < max_exact) return bucket + n;
  // HF computes this in float32 (torch.log of relative_position.float(), the divisor a Python
  // float applied to a float32 tensor) and truncates toward zero; the same operations in float
  // give its buckets, also where the quotient lands close to an integer.
  const float ratio = static_cast<float>(n) / static_cast<float>(max_exact);
  const float span = static_cast<float>(std::log(static_cast<double>(max_distance) / max_exact));
  const float scaled = std::log(ratio) / span * static_cast<float>(num_buckets - max_exact);
  const int large = max_exact + static_cast<int>(scaled);
  return bucket + std::min(large, num_buckets - 1);
}

std::vector<int32_t> relative_position_buckets(int Tq, int Tk, bool bidirectional, int num_buckets, int max_distance,
                                               int first_query) {
  std::vector<int32_t> out(static_cast<size_t>(Tq) * Tk);
  for (int i = 0; i < Tq; ++i)
    for (int j = 0; j < Tk; ++j)
      out[static_cast<size_t>(i) * Tk + j] = relative_position_bucket(j - (first_query + i), bidirectional, num_buckets,
                                                                          max_distance);
  return out;
}

}  // namespace strata
