// Loading tokenizer.json (the HF tokenizers serialization, version "1.0").
#include "io/files.h"
#include "tokenizers/json_fields.h"
#include "tokenizers/tokenizer_impl.h"
#include "util/error.h"

namespace strata::tok {

namespace {

using json_fields::get_bool;
using nlohmann::json;

const json& field_or_null(const json& j, const char* key) {
  static const json null_json;
  auto it = j.find(key);
  return it == j.end() ? null_json : *it;
}

std::vector<AddedToken> added_tokens_from_json(const json& j, const std::string& where) {
  std::vector<AddedToken> out;
  if (j.is_null()) return out;
  if (!j.is_array()) fail(where, ": expected an array");
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string w = cat(where, "[", i, "]");
    AddedToken t;
    t.content = json_fields::get_string(j[i], "content", w);
    t.single_word = get_bool(j[i], "single_word", false, w);
    t.lstrip = get_bool(j[i], "lstrip", false, w);
    t.rstrip = get_bool(j[i], "rstrip", false, w);
    t.normalized = get_bool(j[i], "normalized", true, w);
    t.special = get_bool(j[i], "special", false, w);
    out.push_back(std::move(t));
  }
  return out;
}

bool right_direction(const json& j, const std::string& where) {
  const std::string d = json_fields::get_string_or(j, "direction", "Right", where);
  if (d != "Right" && d != "Left") fail(where, ".direction: expected Right or Left, got '", d, "'");
  return d == "Right";
}

std::optional<TruncationParams> truncation_from_json(const json& j, const std::string& where) {
  if (j.is_null()) return std::nullopt;
  TruncationParams t;
  json_fields::require(j, "max_length", where);
  t.max_length = json_fields::get_uint_or(j, "max_length", 0, where);
  t.stride = json_fields::get_uint_or(j, "stride", 0, where);
  const std::string s = json_fields::get_string_or(j, "strategy", "LongestFirst", where);
  if (s == "LongestFirst")
    t.strategy = TruncationStrategy::LongestFirst;
  else if (s == "OnlyFirst")
    t.strategy = TruncationStrategy::OnlyFirst;
  else if (s == "OnlySecond")
    t.strategy = TruncationStrategy::OnlySecond;
  else
    fail(where, ".strategy: expected LongestFirst, OnlyFirst or OnlySecond, got '", s, "'");
  t.right = right_direction(j, where);
  return t;
}

std::optional<PaddingParams> padding_from_json(const json& j, const std::string& where) {
  if (j.is_null()) return std::nullopt;
  PaddingParams p;
  const json& s = json_fields::require(j, "strategy", where);
  if (s.is_string() && s.get<std::string>() == "BatchLongest") {
    p.strategy = PaddingStrategy::Longest;
  } else if (s.is_object() && s.contains("Fixed")) {
    p.strategy = PaddingStrategy::MaxLength;
    p.max_length = json_fields::get_uint_or(s, "Fixed", 0, where + ".strategy");
  } else {
    fail(where, ".strategy: expected \"BatchLongest\" or {\"Fixed\": n}, got ", s.dump());
  }
  p.right = right_direction(j, where);
  p.pad_to_multiple_of = json_fields::get_uint_or(j, "pad_to_multiple_of", 0, where);
  p.pad_id = static_cast<int32_t>(json_fields::get_uint_or(j, "pad_id", 0, where));
  p.pad_type_id = static_cast<int32_t>(json_fields::get_uint_or(j, "pad_type_id", 0, where));
  p.pad_token = json_fields::get_string_or(j, "pad_token", "[PAD]", where);
  return p;
}

}  // namespace

std::unique_ptr<Tokenizer::Impl> load_tokenizer_json(const std::string& path) {
  const json j = io::read_json_file(path);
  if (!j.is_object()) fail(path, ": expected a JSON object (a tokenizer.json)");
  const std::string version = json_fields::get_string_or(j, "version", "1.0", path);
  if (version != "1.0") fail(path, ": unknown tokenizer.json version '", version, "' (expected 1.0)");
  auto impl = std::make_unique<Tokenizer::Impl>();
  impl->normalizer = normalizer_from_json(field_or_null(j, "normalizer"), path + ": normalizer");
  impl->pre_tokenizer = pre_tokenizer_from_json(field_or_null(j, "pre_tokenizer"), path + ": pre_tokenizer");
  impl->model = model_from_json(json_fields::require(j, "model", path), path + ": model");
  impl->post_processor = post_processor_from_json(field_or_null(j, "post_processor"), path + ": post_processor");
  impl->decoder = decoder_from_json(field_or_null(j, "decoder"), path + ": decoder");
  impl->truncation = truncation_from_json(field_or_null(j, "truncation"), path + ": truncation");
  impl->padding = padding_from_json(field_or_null(j, "padding"), path + ": padding");
  impl->add_tokens(added_tokens_from_json(field_or_null(j, "added_tokens"), path + ": added_tokens"));
  return impl;
}

}  // namespace strata::tok
