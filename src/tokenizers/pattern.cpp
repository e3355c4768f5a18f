#include "tokenizers/pattern.h"

#include "util/error.h"

namespace strata::tok {

Pattern Pattern::from_json(const nlohmann::json& j, const std::string& where) {
  Pattern p;
  if (j.is_object() && j.size() == 1 && j.contains("String") && j["String"].is_string()) {
    p.literal_ = j["String"].get<std::string>();
    // HF compiles the escaped literal; an empty one matches the empty string everywhere.
    if (p.literal_.empty()) p.regex_.emplace("", where);
  } else if (j.is_object() && j.size() == 1 && j.contains("Regex") && j["Regex"].is_string()) {
    p.regex_.emplace(j["Regex"].get<std::string>(), where);
  } else {
    fail(where, ": expected {\"String\": \"...\"} or {\"Regex\": \"...\"}, got ", j.dump());
  }
  return p;
}

void Pattern::find_matches(std::string_view s, std::vector<Match>& out) const {
  if (regex_)
    regex_->find_matches(s, out);
  else
    find_literal_matches(s, literal_, out);
}

}  // namespace strata::tok
