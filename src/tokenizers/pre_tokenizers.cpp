#include "tokenizers/pre_tokenizers.h"

#include "tokenizers/byte_level.h"
#include "tokenizers/json_fields.h"
#include "tokenizers/pattern.h"
#include "util/error.h"

namespace strata::tok {

namespace {

using json_fields::get_bool;

// Splits every untokenized piece on the characters pred selects.
template <typename Pred>
void split_on_chars(PreTokenized& pt, Pred pred, SplitBehavior behavior) {
  thread_local std::vector<Match> matches;
  pt.split([&](NormalizedString&& s, std::vector<NormalizedString>& out) {
    find_char_matches(s.get(), pred, matches);
    s.split(matches, behavior, out);
  });
}

class BertPreTokenizer final : public PreTokenizer {
 public:
  void pre_tokenize(PreTokenized& pt) const override {
    split_on_chars(pt, uni::is_whitespace, SplitBehavior::Removed);
    split_on_chars(pt, uni::is_punctuation, SplitBehavior::Isolated);
  }
};

// \w+|[^\w\s]+ with the matches kept and the whitespace between them removed.
class Whitespace final : public PreTokenizer {
 public:
  static int char_kind(char32_t c) { return uni::is_whitespace(c) ? 0 : uni::is_word_char(c) ? 1 : 2; }

  void pre_tokenize(PreTokenized& pt) const override {
    thread_local std::vector<Match> pieces;
    pt.split([&](NormalizedString&& s, std::vector<NormalizedString>& out) {
      const std::string& t = s.get();
      pieces.clear();
      if (t.empty()) pieces.push_back({0, 0, false});
      // Runs of word characters and runs of other non-space characters are kept (is_match
      // false: HF inverts the regex), the whitespace between them is removed.
      for (size_t i = 0; i < t.size();) {
        size_t len;
        const int kind = char_kind(uni::decode(t, i, &len));
        size_t j = i + len;
        while (j < t.size() && char_kind(uni::decode(t, j, &len)) == kind) j += len;
        pieces.push_back({i, j, kind == 0});
        i = j;
      }
      s.split(pieces, SplitBehavior::Removed, out);
    });
  }
};

class WhitespaceSplit final : public PreTokenizer {
 public:
  void pre_tokenize(PreTokenized& pt) const override { split_on_chars(pt, uni::is_whitespace, SplitBehavior::Removed); }
};

class Punctuation final : public PreTokenizer {
 public:
  explicit Punctuation(SplitBehavior b) : behavior_(b) {}
  void pre_tokenize(PreTokenized& pt) const override { split_on_chars(pt, uni::is_punctuation, behavior_); }

 private:
  SplitBehavior behavior_;
};

class Digits final : public PreTokenizer {
 public:
  explicit Digits(bool individual) : individual_(individual) {}
  void pre_tokenize(PreTokenized& pt) const override {
    split_on_chars(pt, uni::is_number, individual_ ? SplitBehavior::Isolated : SplitBehavior::Contiguous);
  }

 private:
  bool individual_;
};

class SplitPattern final : public PreTokenizer {
 public:
  SplitPattern(Pattern p, SplitBehavior b, bool invert) : pattern_(std::move(p)), behavior_(b), invert_(invert) {}
  void pre_tokenize(PreTokenized& pt) const override {
    thread_local std::vector<Match> matches;
    pt.split([&](NormalizedString&& s, std::vector<NormalizedString>& out) {
      pattern_.find_matches(s.get(), matches);
      if (invert_)
        for (Match& m : matches) m.is_match = !m.is_match;
      s.split(matches, behavior_, out);
    });
  }

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {}

  void pre_tokenize(PreTokenized& pt) const override {
    thread_local std::vector<Match> matches;
    pt.split([&](NormalizedString&& s, std::vector<NormalizedString>& out) {
      if (add_prefix_space_ && (s.get().empty() || s.get()[0] != ' ')) s.prepend(" ");
      if (use_regex_) {
        byte_level::find_gpt2_matches(s.get(), matches);
        s.split(matches, SplitBehavior::Isolated, out);
      } else {
        out.push_back(std::move(s));
      }
    });
    // Every byte becomes its printable stand-in.
    pt.normalize([](NormalizedString& s) { s.map_bytes(byte_level::byte_to_char); });
  }

 private:
  bool add_prefix_space_, use_regex_;
};

enum class PrependScheme { First, Never, Always };

class Metaspace final : public PreTokenizer {
 public:
  Metaspace(char32_t replacement, PrependScheme scheme, bool split)
      : replacement_(replacement), scheme_(scheme), split_(split) {
    uni::append_utf8(rep_, replacement);
  }

  void pre_tokenize(PreTokenized& pt) const override {
    thread_local std::vector<Match> matches;
    pt.split([&](NormalizedString&& s, std::vector<NormalizedString>& out) {
      find_char_matches(
          s.get(), [](char32_t c) { return c == U' '; }, matches);
      s.replace(matches, rep_);
      const bool starts = s.get().compare(0, rep_.size(), rep_) == 0;
      if (!starts && (scheme_ == PrependScheme::Always || (scheme_ == PrependScheme::First && s.original_begin() == 0)))
        s.prepend(rep_);
      if (split_) {
        const char32_t r = replacement_;
        find_char_matches(
            s.get(), [r](char32_t c) { return c == r; }, matches);
        s.split(matches, SplitBehavior::MergedWithNext, out);
      } else {
        out.push_back(std::move(s));
      }
    });
  }

 private:
  char32_t replacement_;
  std::string rep_;
  PrependScheme scheme_;
  bool split_;
};

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void pre_tokenize(PreTokenized& pt) const override {
    for (const auto& p : parts_) p->pre_tokenize(pt);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

SplitBehavior behavior_from(const std::string& name, const std::string& where) {
  if (name == "Removed") return SplitBehavior::Removed;
  if (name == "Isolated") return SplitBehavior::Isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (name == "Contiguous") return SplitBehavior::Contiguous;
  fail(where, ".behavior: expected Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous, got '", name,
       "'");
}

char32_t single_char(const std::string& s, const std::string& where) {
  size_t len;
  if (s.empty() || !uni::is_valid_utf8(s) || (uni::decode(s, 0, &len), len != s.size()))
    fail(where, ".replacement: expected exactly one character, got \"", s, "\"");
  return uni::decode(s, 0, &len);
}

std::unique_ptr<PreTokenizer> metaspace_from_json(const nlohmann::json& j, const std::string& where) {
  const char32_t rep = single_char(json_fields::get_string(j, "replacement", where), where);
  PrependScheme scheme = PrependScheme::Always;
  const std::string s = json_fields::get_string_or(j, "prepend_scheme", "always", where);
  if (s == "first")
    scheme = PrependScheme::First;
  else if (s == "never")
    scheme = PrependScheme::Never;
  else if (s != "always")
    fail(where, ".prepend_scheme: expected first, never or always, got '", s, "'");
  // Older files say add_prefix_space instead; false means never (and must agree).
  if (j.contains("add_prefix_space") && !get_bool(j, "add_prefix_space", true, where)) {
    if (scheme != PrependScheme::Never && j.contains("prepend_scheme"))
      fail(where, ": add_prefix_space false does not match prepend_scheme '", s, "'");
    scheme = PrependScheme::Never;
  }
  return std::make_unique<Metaspace>(rep, scheme, get_bool(j, "split", true, where));
}

}  // namespace

std::unique_ptr<PreTokenizer> make_bert_pre_tokenizer() { return std::make_unique<BertPreTokenizer>(); }

std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex) {
  return std::make_unique<ByteLevel>(add_prefix_space, use_regex);
}

std::unique_ptr<PreTokenizer> pre_tokenizer_from_json(const nlohmann::json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = json_fields::type_of(j, where);
  if (type == "BertPreTokenizer") return make_bert_pre_tokenizer();
  if (type == "Whitespace") return std::make_unique<Whitespace>();
  if (type == "WhitespaceSplit") return std::make_unique<WhitespaceSplit>();
  if (type == "ByteLevel")
    return make_byte_level_pre_tokenizer(get_bool(j, "add_prefix_space", true, where),
                                         get_bool(j, "use_regex", true, where));
  if (type == "Metaspace") return metaspace_from_json(j, where);
  if (type == "Split")
    return std::make_unique<SplitPattern>(
        Pattern::from_json(json_fields::require(j, "pattern", where), where + ".pattern"),
        behavior_from(json_fields::get_string(j, "behavior", where), where), get_bool(j, "invert", false, where));
  if (type == "Punctuation")
    return std::make_unique<Punctuation>(
        behavior_from(json_fields::get_string_or(j, "behavior", "Isolated", where), where));
  if (type == "Digits") return std::make_unique<Digits>(get_bool(j, "individual_digits", false, where));
  if (type == "Sequence")
    return std::make_unique<Sequence>(
        json_fields::sequence_parts<PreTokenizer>(j, "pretokenizers", where, pre_tokenizer_from_json));
  json_fields::unsupported(where, type,
                           {"BertPreTokenizer", "Whitespace", "WhitespaceSplit", "ByteLevel", "Metaspace", "Split",
                            "Punctuation", "Digits", "Sequence"});
}

}  // namespace strata::tok
