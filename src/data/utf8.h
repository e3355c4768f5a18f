// Invalid UTF-8 in dataset text: each maximal ill-formed subsequence becomes one U+FFFD, as
// Python's bytes.decode("utf-8", "replace") and the WHATWG decoder do (the Unicode
// standard's "substitution of maximal subparts"), so texts match what HF datasets reads.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace strata::data {

// Replaces in place; returns the number of U+FFFD inserted (0 leaves s untouched).
size_t replace_invalid_utf8(std::string& s);

}  // namespace strata::data
