// A tensor shape as error messages print it: "[768, 3072]" (a scalar: "[]"), as Python prints
// the list inside torch.Size. The one formatter for io/, models/ and train/ messages.
#pragma once
#include <cstdint>
#include <span>
#include <string>

namespace strata {

inline std::string shape_str(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace strata
