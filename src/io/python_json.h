// JSON text as Python's json.dumps(obj, indent=N, sort_keys=True) writes it, which is how HF
// writes trainer_state.json, config.json, the *_results.json files and the safetensors index.
// nlohmann's dump has the same layout and the same float notation (Python's repr rules) but
// takes its digits from Grisu2, which is shortest in nearly every case but not in all:
// 0.693429865689489 came out as 0.6934298656894889, the same double, a different text than
// HF re-saving the file writes. Here floats get the shortest digits that round-trip
// (std::to_chars), as Python's repr does.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace strata::io {

// A float as Python's repr writes it: the shortest round-trip digits, fixed notation for
// decimal exponents -4..15 ("0.0001", "2.0", "1000000000000000.0") and scientific otherwise
// ("1e-05", "1.5e+16"). NaN and infinities as nlohmann writes them (null).
std::string python_float(double v);

// j as json.dumps(j, indent=indent, sort_keys=True) (nlohmann objects are sorted), without
// the trailing newline. Strings are written as nlohmann writes them (UTF-8, not \u escapes).
std::string python_json(const nlohmann::json& j, int indent = 2);

}  // namespace strata::io
