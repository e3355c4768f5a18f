#include "tokenizers/decoders.h"

#include "tokenizers/byte_fallback.h"
#include "tokenizers/byte_level.h"
#include "tokenizers/json_fields.h"
#include "tokenizers/pattern.h"
#include "tokenizers/unicode.h"
#include "util/error.h"

namespace strata::tok {

namespace {

using json_fields::get_bool;
using json_fields::get_string;

// Rust's str::replace: every non-overlapping occurrence, left to right; an empty pattern
// matches at every character boundary.
std::string replace_all(const std::string& s, const std::string& from, const std::string& to) {
  std::string out;
  if (from.empty()) {
    for (size_t i = 0; i < s.size();) {
      out += to;
      const size_t len = uni::seq_len(static_cast<unsigned char>(s[i]));
      out.append(s, i, len);
      i += len;
    }
    return out + to;
  }
  size_t last = 0;
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, last)) {
    out.append(s, last, pos - last);
    out += to;
    last = pos + from.size();
  }
  out.append(s, last, std::string::npos);
  return out;
}

class WordPiece final : public Decoder {
 public:
  WordPiece(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (t.compare(0, prefix_.size(), prefix_) == 0)
          t.erase(0, prefix_.size());
        else
          t = " " + t;
      }
      if (cleanup_) t = cleanup(t);
    }
  }

 private:
  static std::string cleanup(std::string s) {
    static const std::pair<const char*, const char*> kRules[] = {
        {" .", "."},   {" ?", "?"},           {" !", "!"},   {" ,", ","},     {" ' ", "'"},   {" n't", "n't"},
        {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : kRules) s = replace_all(s, from, to);
    return s;
  }

  std::string prefix_;
  bool cleanup_;
};

class ByteLevel final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      // A token made only of byte-level characters gives their bytes; any other is kept as is.
      const size_t mark = bytes.size();
      bool all = true;
      for (size_t i = 0; i < t.size() && all;) {
        size_t len;
        const int b = byte_level::char_to_byte(uni::decode(t, i, &len));
        if (b < 0)
          all = false;
        else
          bytes += static_cast<char>(b);
        i += len;
      }
      if (!all) {
        bytes.resize(mark);
        bytes += t;
      }
    }
    tokens.assign(1, uni::make_valid_utf8(bytes));
  }
};

class Metaspace final : public Decoder {
 public:
  Metaspace(char32_t replacement, bool prepend) : replacement_(replacement), prepend_(prepend) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const std::string& t = tokens[i];
      for (size_t k = 0; k < t.size();) {
        size_t len;
        const char32_t c = uni::decode(t, k, &len);
        k += len;
        if (c != replacement_)
          uni::append_utf8(out, c);
        else if (!(i == 0 && prepend_))  // the first token's replacement was the prepended space
          out += ' ';
      }
      tokens[i] = std::move(out);
    }
  }

 private:
  char32_t replacement_;
  bool prepend_;
};

class BpeDecoder final : public Decoder {
 public:
  explicit BpeDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = replace_all(tokens[i], suffix_, i + 1 == tokens.size() ? "" : " ");
  }

 private:
  std::string suffix_;
};

class ByteFallback final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string pending;  // bytes of consecutive <0xNN> tokens
    auto flush = [&] {
      if (pending.empty()) return;
      if (uni::is_valid_utf8(pending))
        out.push_back(pending);
      else
        out.insert(out.end(), pending.size(), "\xEF\xBF\xBD");
      pending.clear();
    };
    for (std::string& t : tokens) {
      if (const int byte = byte_fallback::token_byte(t); byte >= 0) {
        pending += static_cast<char>(byte);
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    tokens = std::move(out);
  }
};

class Fuse final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

class Strip final : public Decoder {
 public:
  Strip(char32_t content, size_t start, size_t stop) : content_(content), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      std::vector<char32_t> chars;
      for (size_t k = 0; k < t.size();) {
        size_t len;
        chars.push_back(uni::decode(t, k, &len));
        k += len;
      }
      size_t start_cut = 0, stop_cut = chars.size();
      for (size_t i = 0; i < start_ && i < chars.size() && chars[i] == content_; ++i) start_cut = i + 1;
      for (size_t i = 0; i < stop_ && i < chars.size() && chars[chars.size() - 1 - i] == content_; ++i)
        stop_cut = chars.size() - 1 - i;
      std::string out;
      for (size_t i = start_cut; i < stop_cut; ++i) uni::append_utf8(out, chars[i]);
      t = std::move(out);
    }
  }

 private:
  char32_t content_;
  size_t start_, stop_;
};

class Replace final : public Decoder {
 public:
  Replace(Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<Match> matches;
    for (std::string& t : tokens) {
      pattern_.find_matches(t, matches);
      std::string out;
      for (const Match& m : matches) {
        if (m.is_match)
          out += content_;
        else
          out.append(t, m.b, m.e - m.b);
      }
      t = std::move(out);
    }
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class Sequence final : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& p : parts_) p->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

char32_t one_char(const std::string& s, const char* field, const std::string& where) {
  size_t len = 0;
  if (s.empty() || !uni::is_valid_utf8(s) || (uni::decode(s, 0, &len), len != s.size()))
    fail(where, ".", field, ": expected exactly one character, got \"", s, "\"");
  return uni::decode(s, 0, &len);
}

}  // namespace

std::string Decoder::decode(std::vector<std::string> tokens) const {
  decode_chain(tokens);
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

std::unique_ptr<Decoder> make_wordpiece_decoder(const std::string& prefix, bool cleanup) {
  return std::make_unique<WordPiece>(prefix, cleanup);
}

std::unique_ptr<Decoder> make_byte_level_decoder() { return std::make_unique<ByteLevel>(); }

std::unique_ptr<Decoder> decoder_from_json(const nlohmann::json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = json_fields::type_of(j, where);
  if (type == "WordPiece")
    return make_wordpiece_decoder(json_fields::get_string_or(j, "prefix", "##", where),
                                  get_bool(j, "cleanup", true, where));
  if (type == "ByteLevel") return make_byte_level_decoder();
  if (type == "Metaspace") {
    const std::string scheme = json_fields::get_string_or(j, "prepend_scheme", "always", where);
    if (scheme != "always" && scheme != "first" && scheme != "never")
      fail(where, ".prepend_scheme: expected first, never or always, got '", scheme, "'");
    bool prepend = scheme != "never";
    if (j.contains("add_prefix_space") && !get_bool(j, "add_prefix_space", true, where)) prepend = false;
    return std::make_unique<Metaspace>(one_char(get_string(j, "replacement", where), "replacement", where), prepend);
  }
  if (type == "BPEDecoder") return std::make_unique<BpeDecoder>(json_fields::get_string_or(j, "suffix", "</w>", where));
  if (type == "ByteFallback") return std::make_unique<ByteFallback>();
  if (type == "Fuse") return std::make_unique<Fuse>();
  if (type == "Strip")
    return std::make_unique<Strip>(one_char(get_string(j, "content", where), "content", where),
                                   json_fields::get_uint_or(j, "start", 0, where),
                                   json_fields::get_uint_or(j, "stop", 0, where));
  if (type == "Replace")
    return std::make_unique<Replace>(Pattern::from_json(json_fields::require(j, "pattern", where), where + ".pattern"),
                                     get_string(j, "content", where));
  if (type == "Sequence")
    return std::make_unique<Sequence>(
        json_fields::sequence_parts<Decoder>(j, "decoders", where, decoder_from_json));
  json_fields::unsupported(
      where, type,
      {"WordPiece", "ByteLevel", "Metaspace", "BPEDecoder", "ByteFallback", "Fuse", "Strip", "Replace", "Sequence"});
}

}  // namespace strata::tok
