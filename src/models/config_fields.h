// Typed reads of config.json fields, with errors that name the file and the field. Shared by
// every architecture's config parser.
#pragma once
#include <climits>
#include <string>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace strata {

class ConfigFields {
 public:
  ConfigFields(const nlohmann::json& j, const std::string& source, const std::string& model_type)
      : j_(j), src_(source), type_(model_type) {}

  const std::string& source() const { return src_; }
  bool has(const char* key) const {
    const auto* v = get(key);
    return v && !v->is_null();
  }
  int required_int(const char* key) const {
    const auto* v = get(key);
    if (!v) fail(src_, ": field '", key, "' is missing (model_type '", type_, "' needs it)");
    if (!v->is_number_integer() || v->get<long long>() <= 0 || v->get<long long>() > INT32_MAX)
      fail(src_, ": field '", key, "' must be a positive integer below 2^31, got ", v->dump());
    return v->get<int>();
  }
  int positive_int_or(const char* key, int dflt) const { return has(key) ? required_int(key) : dflt; }
  int int_or(const char* key, int dflt) const {
    const auto* v = get(key);
    if (!v || v->is_null()) return dflt;
    if (!v->is_number_integer() || v->get<long long>() < INT32_MIN || v->get<long long>() > INT32_MAX)
      fail(src_, ": field '", key, "' must be a 32-bit integer, got ", v->dump());
    return v->get<int>();
  }
  double num_or(const char* key, double dflt) const {
    const auto* v = get(key);
    if (!v || v->is_null()) return dflt;
    if (!v->is_number()) fail(src_, ": field '", key, "' must be a number, got ", v->dump());
    return v->get<double>();
  }
  std::string str_or(const char* key, const std::string& dflt) const {
    const auto* v = get(key);
    if (!v || v->is_null()) return dflt;
    if (!v->is_string()) fail(src_, ": field '", key, "' must be a string, got ", v->dump());
    return v->get<std::string>();
  }
  bool bool_or(const char* key, bool dflt) const {
    const auto* v = get(key);
    if (!v || v->is_null()) return dflt;
    if (!v->is_boolean()) fail(src_, ": field '", key, "' must be true or false, got ", v->dump());
    return v->get<bool>();
  }

 private:
  const nlohmann::json* get(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  const nlohmann::json& j_;
  const std::string& src_;
  const std::string& type_;
};

}  // namespace strata
