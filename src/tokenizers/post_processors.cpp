#include "tokenizers/post_processors.h"

#include <map>

#include "tokenizers/byte_level.h"
#include "tokenizers/json_fields.h"
#include "util/error.h"

namespace strata::tok {

namespace {

using json_fields::get_bool;
using Special = std::pair<std::string, int32_t>;

// Wraps e as `before + e + after` with special tokens of the given type id; the sequence's own
// tokens get special_tokens_mask 0 and keep (type_ids == nullptr) or get type id *type_ids.
Encoding wrap(const Encoding& e, const std::vector<Special>& before, const std::vector<Special>& after,
              int32_t special_type, const int32_t* type_ids) {
  Encoding w;
  const size_t n = before.size() + e.ids.size() + after.size();
  w.ids.reserve(n);
  auto add_special = [&](const Special& s) {
    w.ids.push_back(s.second);
    w.type_ids.push_back(special_type);
    w.tokens.push_back(s.first);
    w.offsets.emplace_back(0, 0);
    w.special_tokens_mask.push_back(1);
    w.attention_mask.push_back(1);
  };
  for (const Special& s : before) add_special(s);
  w.ids.insert(w.ids.end(), e.ids.begin(), e.ids.end());
  if (type_ids)
    w.type_ids.insert(w.type_ids.end(), e.ids.size(), *type_ids);
  else
    w.type_ids.insert(w.type_ids.end(), e.type_ids.begin(), e.type_ids.end());
  w.tokens.insert(w.tokens.end(), e.tokens.begin(), e.tokens.end());
  w.offsets.insert(w.offsets.end(), e.offsets.begin(), e.offsets.end());
  w.special_tokens_mask.insert(w.special_tokens_mask.end(), e.ids.size(), 0);
  w.attention_mask.insert(w.attention_mask.end(), e.ids.size(), 1);
  for (const Special& s : after) add_special(s);
  return w;
}

// Applies `f` to the encoding and to each of its overflowing windows, as BertProcessing and
// RobertaProcessing do (the windows get the same special tokens, no overflowing of their own).
template <typename F>
Encoding wrap_all(Encoding& e, F f) {
  Encoding out = f(e);
  for (const Encoding& o : e.overflowing) out.overflowing.push_back(f(o));
  return out;
}

class BertProcessing final : public PostProcessor {
 public:
  BertProcessing(Special cls, Special sep) : cls_(std::move(cls)), sep_(std::move(sep)) {}
  size_t added_tokens(bool pair) const override { return pair ? 3 : 2; }
  void process(std::vector<Encoding>& encs, bool add_special_tokens) const override {
    if (!add_special_tokens) return;
    for (size_t i = 0; i < encs.size(); ++i) {
      if (i == 0)
        encs[i] = wrap_all(encs[i], [&](const Encoding& e) { return wrap(e, {cls_}, {sep_}, 0, nullptr); });
      else
        encs[i] = wrap_all(encs[i], [&](const Encoding& e) { return wrap(e, {}, {sep_}, 1, nullptr); });
    }
  }

 private:
  Special cls_, sep_;
};

class RobertaProcessing final : public PostProcessor {
 public:
  RobertaProcessing(Special cls, Special sep, bool trim_offsets, bool add_prefix_space)
      : cls_(std::move(cls)), sep_(std::move(sep)), trim_(trim_offsets), add_prefix_space_(add_prefix_space) {}
  size_t added_tokens(bool pair) const override { return pair ? 4 : 2; }
  void process(std::vector<Encoding>& encs, bool add_special_tokens) const override {
    if (trim_) {
      for (Encoding& e : encs) {
        byte_level::trim_offsets(e, add_prefix_space_);
        for (Encoding& o : e.overflowing) byte_level::trim_offsets(o, add_prefix_space_);
      }
    }
    for (Encoding& e : encs) e.type_ids.assign(e.ids.size(), 0);  // RoBERTa: every type id is 0
    if (!add_special_tokens) return;
    const int32_t zero = 0;
    for (size_t i = 0; i < encs.size(); ++i) {
      const std::vector<Special> before = {i == 0 ? cls_ : sep_};
      encs[i] = wrap_all(encs[i], [&](const Encoding& e) { return wrap(e, before, {sep_}, 0, &zero); });
    }
  }

 private:
  Special cls_, sep_;
  bool trim_, add_prefix_space_;
};

class ByteLevelProcessing final : public PostProcessor {
 public:
  ByteLevelProcessing(bool trim_offsets, bool add_prefix_space)
      : trim_(trim_offsets), add_prefix_space_(add_prefix_space) {}
  size_t added_tokens(bool) const override { return 0; }
  void process(std::vector<Encoding>& encs, bool) const override {
    if (!trim_) return;
    for (Encoding& e : encs) {
      byte_level::trim_offsets(e, add_prefix_space_);
      for (Encoding& o : e.overflowing) byte_level::trim_offsets(o, add_prefix_space_);
    }
  }

 private:
  bool trim_, add_prefix_space_;
};

struct Piece {
  bool is_sequence;  // else a special token
  int sequence;      // 0: $A, 1: $B
  std::string special;
  int32_t type_id;
};

struct SpecialTokens {
  std::vector<int32_t> ids;
  std::vector<std::string> tokens;
};

class TemplateProcessing final : public PostProcessor {
 public:
  TemplateProcessing(std::vector<Piece> single, std::vector<Piece> pair, std::map<std::string, SpecialTokens> specials)
      : single_(std::move(single)), pair_(std::move(pair)), specials_(std::move(specials)) {
    added_single_ = count(single_);
    added_pair_ = count(pair_);
  }
  size_t added_tokens(bool pair) const override { return pair ? added_pair_ : added_single_; }

  void process(std::vector<Encoding>& encs, bool add_special_tokens) const override {
    const std::vector<Piece>& tmpl = encs.size() == 2 ? pair_ : single_;
    std::vector<Encoding> out;
    for (const Piece& p : tmpl) {
      if (p.is_sequence) {
        if (static_cast<size_t>(p.sequence) >= encs.size())
          fail("TemplateProcessing: the template uses $B without a pair");
        Encoding e = encs[static_cast<size_t>(p.sequence)];
        e.type_ids.assign(e.ids.size(), p.type_id);  // the windows keep theirs, as in HF
        out.push_back(std::move(e));
      } else if (add_special_tokens) {
        const SpecialTokens& s = specials_.at(p.special);
        Encoding e;
        e.ids = s.ids;
        e.tokens = s.tokens;
        e.type_ids.assign(s.ids.size(), p.type_id);
        e.offsets.assign(s.ids.size(), {0, 0});
        e.special_tokens_mask.assign(s.ids.size(), 1);
        e.attention_mask.assign(s.ids.size(), 1);
        out.push_back(std::move(e));
      }
    }
    encs = std::move(out);
  }

 private:
  size_t count(const std::vector<Piece>& t) const {
    size_t n = 0;
    for (const Piece& p : t)
      if (!p.is_sequence) n += specials_.at(p.special).ids.size();
    return n;
  }

  std::vector<Piece> single_, pair_;
  std::map<std::string, SpecialTokens> specials_;
  size_t added_single_, added_pair_;
};

class Sequence final : public PostProcessor {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
  size_t added_tokens(bool pair) const override {
    size_t n = 0;
    for (const auto& p : parts_) n += p->added_tokens(pair);
    return n;
  }
  void process(std::vector<Encoding>& encs, bool add_special_tokens) const override {
    for (const auto& p : parts_) p->process(encs, add_special_tokens);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

Special special_pair(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = json_fields::require(j, key, where);
  if (!v.is_array() || v.size() != 2 || !v[0].is_string() || !v[1].is_number_integer())
    fail(where, ".", key, ": expected [\"token\", id], got ", v.dump());
  return {v[0].get<std::string>(), v[1].get<int32_t>()};
}

// "$A:0", "[CLS]:1", "$B", "$1" (sequence A, type id 1), "$" (sequence A).
Piece piece_from_string(const std::string& s, const std::string& where) {
  std::string id = s;
  int32_t type_id = 0;
  bool typed = false;
  if (const size_t colon = s.find(':'); colon != std::string::npos) {
    id = s.substr(0, colon);
    const std::string t = s.substr(colon + 1);
    if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos || t.find(':') != std::string::npos)
      fail(where, ": cannot read template piece \"", s, "\"");
    type_id = std::stoi(t);
    typed = true;
  }
  if (id.empty() || id[0] != '$') return {false, 0, id, type_id};
  const std::string rest = id.substr(1);
  if (rest.empty() || rest == "A" || rest == "a") return {true, 0, "", type_id};
  if (rest == "B" || rest == "b") return {true, 1, "", type_id};
  if (rest.find_first_not_of("0123456789") == std::string::npos && !typed) return {true, 0, "", std::stoi(rest)};
  fail(where, ": cannot read template piece \"", s, "\"");
}

std::vector<Piece> template_from_json(const nlohmann::json& j, const std::string& where) {
  std::vector<Piece> pieces;
  if (j.is_string()) {  // "[CLS]:0 $A:0 [SEP]:0"
    const std::string s = j.get<std::string>();
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && s[i] == ' ') ++i;
      size_t k = i;
      while (k < s.size() && s[k] != ' ') ++k;
      if (k > i) pieces.push_back(piece_from_string(s.substr(i, k - i), where));
      i = k;
    }
    return pieces;
  }
  if (!j.is_array()) fail(where, ": expected a list of template pieces, got ", j.dump());
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& p = j[i];
    const std::string w = cat(where, "[", i, "]");
    if (p.is_string()) {
      pieces.push_back(piece_from_string(p.get<std::string>(), w));
    } else if (p.is_object() && p.size() == 1 && p.contains("Sequence")) {
      const auto& q = p["Sequence"];
      const std::string id = json_fields::get_string(q, "id", w + ".Sequence");
      if (id != "A" && id != "B") fail(w, ".Sequence.id: expected \"A\" or \"B\", got \"", id, "\"");
      pieces.push_back(
          {true, id == "B" ? 1 : 0, "", static_cast<int32_t>(json_fields::get_uint_or(q, "type_id", 0, w))});
    } else if (p.is_object() && p.size() == 1 && p.contains("SpecialToken")) {
      const auto& q = p["SpecialToken"];
      pieces.push_back({false, 0, json_fields::get_string(q, "id", w + ".SpecialToken"),
                        static_cast<int32_t>(json_fields::get_uint_or(q, "type_id", 0, w))});
    } else {
      fail(w, ": expected {\"Sequence\": ...} or {\"SpecialToken\": ...}, got ", p.dump());
    }
  }
  return pieces;
}

std::unique_ptr<PostProcessor> template_processing_from_json(const nlohmann::json& j, const std::string& where) {
  std::map<std::string, SpecialTokens> specials;
  if (j.contains("special_tokens") && !j["special_tokens"].is_null()) {
    const auto& st = j["special_tokens"];
    if (!st.is_object()) fail(where, ".special_tokens: expected an object");
    for (auto it = st.begin(); it != st.end(); ++it) {
      const std::string w = where + ".special_tokens." + it.key();
      const auto& ids = json_fields::require(it.value(), "ids", w);
      const auto& toks = json_fields::require(it.value(), "tokens", w);
      if (!ids.is_array() || !toks.is_array() || ids.size() != toks.size())
        fail(w, ": expected ids and tokens of the same length");
      SpecialTokens s;
      for (const auto& id : ids) s.ids.push_back(id.get<int32_t>());
      for (const auto& t : toks) s.tokens.push_back(t.get<std::string>());
      specials[json_fields::get_string_or(it.value(), "id", it.key(), w)] = std::move(s);
    }
  }
  std::vector<Piece> single = template_from_json(json_fields::require(j, "single", where), where + ".single");
  std::vector<Piece> pair = template_from_json(json_fields::require(j, "pair", where), where + ".pair");
  bool has_a = false, has_b = false;
  for (const Piece& p : pair) {
    has_a |= p.is_sequence && p.sequence == 0;
    has_b |= p.is_sequence && p.sequence == 1;
  }
  if (!has_a || !has_b) fail(where, ".pair: the pair template must use both $A and $B");
  for (const auto* t : {&single, &pair})
    for (const Piece& p : *t)
      if (!p.is_sequence && !specials.count(p.special))
        fail(where, ": the template uses special token '", p.special, "', which special_tokens does not define");
  return std::make_unique<TemplateProcessing>(std::move(single), std::move(pair), std::move(specials));
}

}  // namespace

std::unique_ptr<PostProcessor> make_bert_template(Special cls, Special sep) {
  std::map<std::string, SpecialTokens> specials;
  specials[cls.first] = {{cls.second}, {cls.first}};
  specials[sep.first] = {{sep.second}, {sep.first}};
  std::vector<Piece> single = {{false, 0, cls.first, 0}, {true, 0, "", 0}, {false, 0, sep.first, 0}};
  std::vector<Piece> pair = single;
  pair.push_back({true, 1, "", 1});
  pair.push_back({false, 0, sep.first, 1});
  return std::make_unique<TemplateProcessing>(std::move(single), std::move(pair), std::move(specials));
}

std::unique_ptr<PostProcessor> make_roberta_processing(Special cls, Special sep, bool trim_offsets,
                                                       bool add_prefix_space) {
  return std::make_unique<RobertaProcessing>(std::move(cls), std::move(sep), trim_offsets, add_prefix_space);
}

std::unique_ptr<PostProcessor> make_byte_level_processing(bool trim_offsets, bool add_prefix_space) {
  return std::make_unique<ByteLevelProcessing>(trim_offsets, add_prefix_space);
}

std::unique_ptr<PostProcessor> post_processor_from_json(const nlohmann::json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = json_fields::type_of(j, where);
  if (type == "BertProcessing")
    return std::make_unique<BertProcessing>(special_pair(j, "cls", where), special_pair(j, "sep", where));
  if (type == "RobertaProcessing")
    return make_roberta_processing(special_pair(j, "cls", where), special_pair(j, "sep", where),
                                   get_bool(j, "trim_offsets", true, where),
                                   get_bool(j, "add_prefix_space", true, where));
  if (type == "ByteLevel")
    return make_byte_level_processing(get_bool(j, "trim_offsets", true, where),
                                      get_bool(j, "add_prefix_space", true, where));
  if (type == "TemplateProcessing") return template_processing_from_json(j, where);
  if (type == "Sequence")
    return std::make_unique<Sequence>(
        json_fields::sequence_parts<PostProcessor>(j, "processors", where, post_processor_from_json));
  json_fields::unsupported(where, type,
                           {"BertProcessing", "RobertaProcessing", "TemplateProcessing", "ByteLevel", "Sequence"});
}

}  // namespace strata::tok
