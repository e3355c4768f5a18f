// "did you mean" for a column name that is not in the file.
#pragma once
#include <string>
#include <vector>

namespace strata::data {

// The candidate closest to `asked` by edit distance (case-insensitive), or "" when none is
// close enough to be a plausible typo.
std::string nearest_name(const std::string& asked, const std::vector<std::string>& candidates);

// The tail of a missing-column error: " (columns: a, b, c); did you mean 'b'?" (the
// suggestion only when nearest_name finds one).
std::string columns_hint(const std::string& asked, const std::vector<std::string>& candidates);

}  // namespace strata::data
