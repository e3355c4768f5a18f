#include "util/nearest_name.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace strata {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same =
          std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1]));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string nearest_name(std::string_view asked, const std::vector<std::string>& candidates) {
  const std::string* best = nullptr;
  size_t best_d = SIZE_MAX;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(asked, c);
    if (d < best_d) best_d = d, best = &c;
  }
  const size_t limit = std::max<size_t>(2, asked.size() / 3);
  return best && best_d <= limit ? *best : std::string();
}

std::string did_you_mean(std::string_view asked, const std::vector<std::string>& candidates) {
  const std::string near = nearest_name(asked, candidates);
  return near.empty() ? std::string() : "; did you mean '" + near + "'?";
}

}  // namespace strata
