#include "data/nearest_name.h"

#include <algorithm>
#include <cctype>

namespace strata::data {

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
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

}  // namespace

std::string nearest_name(const std::string& asked, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(asked, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // More than about a third of the name changed is a different name, not a typo.
  const size_t limit = std::max<size_t>(2, asked.size() / 3);
  return best_d <= limit ? best : "";
}

std::string columns_hint(const std::string& asked, const std::vector<std::string>& candidates) {
  std::string out = " (columns: ";
  for (size_t i = 0; i < candidates.size(); ++i) out += (i ? ", " : "") + candidates[i];
  if (candidates.empty()) out += "none";
  out += ")";
  const std::string near = nearest_name(asked, candidates);
  if (!near.empty()) out += "; did you mean '" + near + "'?";
  return out;
}

}  // namespace strata::data
