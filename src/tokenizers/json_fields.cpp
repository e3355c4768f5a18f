#include "tokenizers/json_fields.h"

#include "util/error.h"

namespace strata::tok::json_fields {

namespace {
const json* find(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}
}  // namespace

const json& require(const json& j, const char* key, const std::string& where) {
  if (!j.is_object()) fail(where, ": expected a JSON object, got ", j.dump());
  const json* v = find(j, key);
  if (!v) fail(where, ": missing field '", key, "'");
  return *v;
}

const json& require_array(const json& j, const char* key, const std::string& where) {
  const json& v = require(j, key, where);
  if (!v.is_array()) fail(where, ".", key, ": expected an array");
  return v;
}

bool get_bool(const json& j, const char* key, bool dflt, const std::string& where) {
  const json* v = find(j, key);
  if (!v) return dflt;
  if (!v->is_boolean()) fail(where, ".", key, ": expected true or false, got ", v->dump());
  return v->get<bool>();
}

std::string get_string(const json& j, const char* key, const std::string& where) {
  const json& v = require(j, key, where);
  if (!v.is_string()) fail(where, ".", key, ": expected a string, got ", v.dump());
  return v.get<std::string>();
}

std::string get_string_or(const json& j, const char* key, const std::string& dflt, const std::string& where) {
  const json* v = find(j, key);
  if (!v) return dflt;
  if (!v->is_string()) fail(where, ".", key, ": expected a string, got ", v->dump());
  return v->get<std::string>();
}

uint64_t get_uint_or(const json& j, const char* key, uint64_t dflt, const std::string& where) {
  const json* v = find(j, key);
  if (!v) return dflt;
  if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<int64_t>() >= 0))
    fail(where, ".", key, ": expected a non-negative integer, got ", v->dump());
  return v->get<uint64_t>();
}

std::string type_of(const json& j, const std::string& where) {
  if (!j.is_object()) fail(where, ": expected a JSON object, got ", j.dump());
  return get_string_or(j, "type", "", where);
}

void unsupported(const std::string& where, const std::string& type, const std::vector<std::string>& supported) {
  std::string list;
  for (const auto& s : supported) list += (list.empty() ? "" : ", ") + s;
  fail(where, " type '", type, "' is not supported; supported: ", list);
}

}  // namespace strata::tok::json_fields
