// "Did you mean ...?" for a name that is not known: an option key, a column, a field. One
// rule for every caller, so a typo is suggested (or not) the same way everywhere.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace strata {

// Levenshtein distance, ASCII letters compared case-insensitively.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `asked` by edit_distance (the first one on ties), or "" when none
// is within max(2, |asked| / 3) edits. Why that bound: beyond about a third of the name's
// characters changed it is a different name, not a typo; the floor of 2 keeps one swapped pair
// of letters ("lable" -> "label", 2 edits) suggested for short names, while short names stay
// apart from unrelated ones (a floor of 3 offered 'task' for HF's 'tf32', and for 'text').
// Case-insensitive because "Label" for "label" is a typo too.
std::string nearest_name(std::string_view asked, const std::vector<std::string>& candidates);

// "; did you mean 'x'?" when nearest_name finds x, else "".
std::string did_you_mean(std::string_view asked, const std::vector<std::string>& candidates);

}  // namespace strata
