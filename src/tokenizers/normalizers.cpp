#include "tokenizers/normalizers.h"

#include "tokenizers/json_fields.h"
#include "tokenizers/pattern.h"
#include "util/error.h"

namespace strata::tok {

namespace {

using json_fields::get_bool;
using json_fields::get_string;

// BERT's cleaning: \t \n \r count as whitespace, not as control characters.
bool bert_removed(char32_t c) {
  if (c == 0 || c == 0xFFFD) return true;
  if (c == '\t' || c == '\n' || c == '\r') return false;
  return uni::is_other(c);
}
bool bert_kept(char32_t c) { return !bert_removed(c); }
char32_t bert_space(char32_t c) { return uni::is_whitespace(c) ? U' ' : c; }
bool not_nonspacing_mark(char32_t c) { return !uni::is_mark_nonspacing(c); }
bool not_combining_mark(char32_t c) { return !uni::is_combining_mark(c); }

class BertNormalizer final : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool chinese, bool strip_accents, bool lowercase)
      : clean_text_(clean_text), chinese_(chinese), strip_accents_(strip_accents), lowercase_(lowercase) {}

  void normalize(NormalizedString& s) const override {
    if (clean_text_) {
      s.filter(bert_kept);
      s.map(bert_space);
    }
    if (chinese_) pad_chinese(s);
    if (strip_accents_) {
      s.normalize_unicode(false, false);
      s.filter(not_nonspacing_mark);
    }
    if (lowercase_) s.lowercase();
  }

 private:
  // A space before and after every CJK ideograph, so the pre-tokenizer isolates it.
  static void pad_chinese(NormalizedString& s) {
    const std::string& t = s.get();
    bool any = false;
    for (size_t i = 0; i < t.size() && !any;) {
      size_t len;
      any = uni::is_chinese_char(uni::decode(t, i, &len));
      i += len;
    }
    if (!any) return;
    std::vector<uni::CharChange> dest;
    dest.reserve(t.size() + 16);
    for (size_t i = 0; i < t.size();) {
      size_t len;
      const char32_t c = uni::decode(t, i, &len);
      i += len;
      if (uni::is_chinese_char(c)) {
        dest.push_back({U' ', 0});
        dest.push_back({c, 1});
        dest.push_back({U' ', 1});
      } else {
        dest.push_back({c, 0});
      }
    }
    s.transform(dest, 0);
  }

  bool clean_text_, chinese_, strip_accents_, lowercase_;
};

class UnicodeNormalizer final : public Normalizer {
 public:
  UnicodeNormalizer(bool compat, bool compose) : compat_(compat), compose_(compose) {}
  void normalize(NormalizedString& s) const override { s.normalize_unicode(compat_, compose_); }

 private:
  bool compat_, compose_;
};

class Lowercase final : public Normalizer {
 public:
  void normalize(NormalizedString& s) const override { s.lowercase(); }
};

class StripAccents final : public Normalizer {
 public:
  void normalize(NormalizedString& s) const override { s.filter(not_combining_mark); }
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(NormalizedString& s) const override {
    if (left_ && right_) {
      s.strip(true, true);
      return;
    }
    if (left_) s.strip(true, false);
    if (right_) s.strip(false, true);
  }

 private:
  bool left_, right_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(NormalizedString& s) const override { s.prepend(prefix_); }

 private:
  std::string prefix_;
};

class Replace final : public Normalizer {
 public:
  Replace(Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(NormalizedString& s) const override {
    thread_local std::vector<Match> matches;
    pattern_.find_matches(s.get(), matches);
    s.replace(matches, content_);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  void normalize(NormalizedString& s) const override {
    for (const auto& p : parts_) p->normalize(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

std::unique_ptr<Normalizer> make_bert_normalizer(bool clean_text, bool handle_chinese_chars, bool strip_accents,
                                                 bool lowercase) {
  return std::make_unique<BertNormalizer>(clean_text, handle_chinese_chars, strip_accents, lowercase);
}

std::unique_ptr<Normalizer> normalizer_from_json(const nlohmann::json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = json_fields::type_of(j, where);
  if (type == "BertNormalizer") {
    const bool lowercase = get_bool(j, "lowercase", true, where);
    return make_bert_normalizer(get_bool(j, "clean_text", true, where),
                                get_bool(j, "handle_chinese_chars", true, where),
                                get_bool(j, "strip_accents", lowercase, where), lowercase);
  }
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(false, true);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(false, false);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(true, true);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(true, false);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "StripAccents") return std::make_unique<StripAccents>();
  if (type == "Strip")
    return std::make_unique<Strip>(get_bool(j, "strip_left", true, where), get_bool(j, "strip_right", true, where));
  if (type == "Prepend") return std::make_unique<Prepend>(get_string(j, "prepend", where));
  if (type == "Replace")
    return std::make_unique<Replace>(Pattern::from_json(json_fields::require(j, "pattern", where), where + ".pattern"),
                                     get_string(j, "content", where));
  if (type == "Precompiled") return make_precompiled(get_string(j, "precompiled_charsmap", where), where);
  if (type == "Sequence")
    return std::make_unique<Sequence>(
        json_fields::sequence_parts<Normalizer>(j, "normalizers", where, normalizer_from_json));
  json_fields::unsupported(where, type,
                           {"BertNormalizer", "NFC", "NFD", "NFKC", "NFKD", "Lowercase", "StripAccents", "Strip",
                            "Prepend", "Replace", "Precompiled", "Sequence"});
}

}  // namespace strata::tok
