// Typed access to the fields of tokenizer.json components. `where` names the file and the
// component ("dir/tokenizer.json: pre_tokenizer.pretokenizers[1]") so that every error says
// which file, which component and what was expected. A missing or null optional field takes
// its default, as serde's defaults do in HF.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace strata::tok::json_fields {

using nlohmann::json;

const json& require(const json& j, const char* key, const std::string& where);
bool get_bool(const json& j, const char* key, bool dflt, const std::string& where);
std::string get_string(const json& j, const char* key, const std::string& where);  // required
std::string get_string_or(const json& j, const char* key, const std::string& dflt, const std::string& where);
uint64_t get_uint_or(const json& j, const char* key, uint64_t dflt, const std::string& where);
// The array at `key`; an error naming `where` when it is missing or not an array.
const json& require_array(const json& j, const char* key, const std::string& where);
// The parts of a {"type": "Sequence", "<key>": [...]} component (normalizers, pretokenizers,
// processors, decoders), each built by make(entry, "<where>.<key>[i]"); an entry that builds
// nothing (null) is left out.
template <typename T, typename Make>
std::vector<std::unique_ptr<T>> sequence_parts(const json& j, const char* key, const std::string& where, Make make) {
  const json& list = require_array(j, key, where);
  std::vector<std::unique_ptr<T>> parts;
  for (size_t i = 0; i < list.size(); ++i)
    if (auto p = make(list[i], where + "." + key + "[" + std::to_string(i) + "]")) parts.push_back(std::move(p));
  return parts;
}
// The "type" tag of a component, or "" when absent.
std::string type_of(const json& j, const std::string& where);
// "<where> type '<type>' is not supported; supported: a, b, c".
[[noreturn]] void unsupported(const std::string& where, const std::string& type,
                              const std::vector<std::string>& supported);

}  // namespace strata::tok::json_fields
