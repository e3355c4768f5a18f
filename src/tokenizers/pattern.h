// The pattern of Split / Replace components: {"String": "..."} (a literal) or {"Regex": "..."}.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizers/normalized_string.h"
#include "tokenizers/regex.h"

namespace strata::tok {

class Pattern {
 public:
  static Pattern from_json(const nlohmann::json& j, const std::string& where);
  void find_matches(std::string_view s, std::vector<Match>& out) const;

 private:
  std::string literal_;
  std::optional<Regex> regex_;  // set for Regex patterns (and the empty literal, which matches everywhere)
};

}  // namespace strata::tok
