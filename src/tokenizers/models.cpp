// Reading the "model" of tokenizer.json into the configs of the three models.
#include "tokenizers/models.h"

#include "tokenizers/json_fields.h"
#include "util/error.h"

namespace strata::tok {

using json_fields::get_bool;
using json_fields::get_string_or;
using json_fields::require;

ReverseVocab::ReverseVocab(const Vocab& vocab) {
  const size_t dense_limit = 2 * vocab.size() + 1024;
  size_t n = 0;
  for (const auto& [tok, id] : vocab)
    if (static_cast<size_t>(id) < dense_limit) n = std::max(n, static_cast<size_t>(id) + 1);
  tokens_.resize(n);
  present_.assign(n, false);
  for (const auto& [tok, id] : vocab) {
    if (static_cast<size_t>(id) >= n) {
      sparse_[id] = tok;
      continue;
    }
    tokens_[static_cast<size_t>(id)] = tok;
    present_[static_cast<size_t>(id)] = true;
  }
}

Vocab vocab_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) fail(where, ": expected an object {\"token\": id, ...}");
  Vocab vocab;
  vocab.reserve(j.size());
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto& v = it.value();
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
      fail(where, ": id of '", it.key(), "' must be a non-negative integer, got ", v.dump());
    vocab[it.key()] = static_cast<int32_t>(v.get<int64_t>());
  }
  return vocab;
}

namespace {

std::optional<std::string> opt_string(const nlohmann::json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) fail(where, ".", key, ": expected a string or null, got ", it->dump());
  return it->get<std::string>();
}

std::unique_ptr<Model> wordpiece_from_json(const nlohmann::json& j, const std::string& where) {
  WordPieceConfig c;
  c.vocab = vocab_from_json(require(j, "vocab", where), where + ".vocab");
  c.unk_token = get_string_or(j, "unk_token", c.unk_token, where);
  c.continuing_subword_prefix = get_string_or(j, "continuing_subword_prefix", c.continuing_subword_prefix, where);
  c.max_input_chars_per_word = json_fields::get_uint_or(j, "max_input_chars_per_word", 100, where);
  return make_wordpiece(std::move(c));
}

std::unique_ptr<Model> bpe_from_json(const nlohmann::json& j, const std::string& where) {
  BpeConfig c;
  c.vocab = vocab_from_json(require(j, "vocab", where), where + ".vocab");
  const auto& merges = require(j, "merges", where);
  if (!merges.is_array()) fail(where, ".merges: expected an array");
  c.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto& m = merges[i];
    // Current files store [left, right] pairs, older ones "left right" strings.
    if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      c.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        fail(where, ".merges[", i, "]: expected \"left right\" (one space), got \"", s, "\"");
      c.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else {
      fail(where, ".merges[", i, "]: expected [\"left\", \"right\"] or \"left right\", got ", m.dump());
    }
  }
  if (auto it = j.find("dropout"); it != j.end() && !it->is_null() && it->get<double>() != 0.0)
    fail(where, ".dropout: BPE dropout is not supported (it makes tokenization random); expected null or 0");
  c.unk_token = opt_string(j, "unk_token", where);
  c.continuing_subword_prefix = opt_string(j, "continuing_subword_prefix", where);
  c.end_of_word_suffix = opt_string(j, "end_of_word_suffix", where);
  c.fuse_unk = get_bool(j, "fuse_unk", false, where);
  c.byte_fallback = get_bool(j, "byte_fallback", false, where);
  c.ignore_merges = get_bool(j, "ignore_merges", false, where);
  return make_bpe(std::move(c), where);
}

std::unique_ptr<Model> unigram_from_json(const nlohmann::json& j, const std::string& where) {
  UnigramConfig c;
  const auto& vocab = require(j, "vocab", where);
  if (!vocab.is_array()) fail(where, ".vocab: expected an array of [piece, score]");
  c.pieces.reserve(vocab.size());
  for (size_t i = 0; i < vocab.size(); ++i) {
    const auto& p = vocab[i];
    if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_number())
      fail(where, ".vocab[", i, "]: expected [\"piece\", score], got ", p.dump());
    c.pieces.emplace_back(p[0].get<std::string>(), p[1].get<double>());
  }
  if (auto it = j.find("unk_id"); it != j.end() && !it->is_null())
    c.unk_id = json_fields::get_uint_or(j, "unk_id", 0, where);
  c.byte_fallback = get_bool(j, "byte_fallback", false, where);
  return make_unigram(std::move(c), where);
}

}  // namespace

std::unique_ptr<Model> model_from_json(const nlohmann::json& j, const std::string& where) {
  std::string type = json_fields::type_of(j, where);
  if (type.empty()) {  // old files carry no tag: recognise the model by its fields
    if (j.contains("merges"))
      type = "BPE";
    else if (j.contains("vocab") && j["vocab"].is_array())
      type = "Unigram";
    else if (j.contains("continuing_subword_prefix") || j.contains("max_input_chars_per_word"))
      type = "WordPiece";
  }
  if (type == "WordPiece") return wordpiece_from_json(j, where);
  if (type == "BPE") return bpe_from_json(j, where);
  if (type == "Unigram") return unigram_from_json(j, where);
  json_fields::unsupported(where, type, {"WordPiece", "BPE", "Unigram"});
}

}  // namespace strata::tok
