// Oniguruma, the engine HF tokenizers compiles `Regex` patterns with, as the oracle for strata's
// own (src/tokenizers/regex.cpp). Every pattern of the regex fuzz corpus (fuzz/corpus/
// regex_match: "PATTERN\0TEXT" files, among them the pre-tokenizer patterns of GPT-2, Llama 3,
// cl100k, o200k, BERT-style splits) runs through both engines on its own text, on the texts of
// the tokenizer parity tests and on random texts, and the pieces of HF's Pattern::find_matches
// are compared. Texts keep only characters Unicode 14 assigns (Debian's libonig 6.9.8 knows no
// later ones; strata follows utf8proc's Unicode 15, docs/tokenizers.md). Every difference is
// printed; any makes the exit status 1.
//   regex_oracle CORPUS_DIR STRINGS_JSONL
#include <oniguruma.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizers/regex.h"
#include "tokenizers/unicode.h"
#include "util/error.h"

namespace {

using strata::tok::Match;
using Pieces = std::vector<Match>;

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<char32_t> code_points(std::string_view s) {
  std::vector<char32_t> out;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    out.push_back(strata::tok::uni::decode(s, i, &len));
    i += len;
  }
  return out;
}

class Onig {
 public:
  Onig(const std::string& pattern) {
    OnigErrorInfo info;
    const auto* p = reinterpret_cast<const OnigUChar*>(pattern.data());
    // HF tokenizers: onig::Regex::new, i.e. Ruby syntax with capture groups.
    status_ = onig_new(&reg_, p, p + pattern.size(), ONIG_OPTION_CAPTURE_GROUP, ONIG_ENCODING_UTF8,
                       ONIG_SYNTAX_RUBY, &info);
    if (status_ != ONIG_NORMAL) {
      OnigUChar buf[ONIG_MAX_ERROR_MESSAGE_LEN];
      onig_error_code_to_str(buf, status_, &info);
      error_ = reinterpret_cast<const char*>(buf);
      reg_ = nullptr;
    }
  }
  ~Onig() {
    if (reg_) onig_free(reg_);
  }
  Onig(const Onig&) = delete;
  Onig& operator=(const Onig&) = delete;

  bool ok() const { return reg_ != nullptr; }
  const std::string& error() const { return error_; }

  // The pieces of HF's Pattern::find_matches over the onig crate's find_iter, or false when
  // Oniguruma gave up (its retry limit).
  bool find_matches(const std::string& s, Pieces& out) const {
    out.clear();
    if (s.empty()) {
      out.push_back({0, 0, false});
      return true;
    }
    const auto* str = reinterpret_cast<const OnigUChar*>(s.data());
    OnigRegion* region = onig_region_new();
    size_t last_end = 0, prev = 0;
    long last_match_end = -1;
    bool ok = true;
    while (last_end <= s.size()) {
      onig_region_clear(region);
      const int r = onig_search(reg_, str, str + s.size(), str + last_end, str + s.size(), region, ONIG_OPTION_NONE);
      if (r == ONIG_MISMATCH) break;
      if (r < 0) {
        ok = false;
        break;
      }
      const auto b = static_cast<size_t>(region->beg[0]), e = static_cast<size_t>(region->end[0]);
      if (b == e && static_cast<long>(e) == last_match_end) {  // no empty match right after a match
        last_end += last_end < s.size() ? strata::tok::uni::seq_len(static_cast<unsigned char>(s[last_end])) : 1;
        continue;
      }
      if (prev != b) out.push_back({prev, b, false});
      out.push_back({b, e, true});
      prev = e;
      last_end = e;
      last_match_end = static_cast<long>(e);
    }
    onig_region_free(region, 1);
    if (ok && prev != s.size()) out.push_back({prev, s.size(), false});
    return ok;
  }

  // Whether Oniguruma matches the whole of the one-character string c with PATTERN.
  bool full_match(char32_t c) const {
    std::string s;
    strata::tok::uni::append_utf8(s, c);
    const auto* str = reinterpret_cast<const OnigUChar*>(s.data());
    return onig_match(reg_, str, str + s.size(), str, nullptr, ONIG_OPTION_NONE) == static_cast<int>(s.size());
  }

 private:
  regex_t* reg_ = nullptr;
  int status_ = 0;
  std::string error_;
};

// Unicode 14's assigned characters, as Oniguruma sees them.
class Assigned {
 public:
  Assigned() : re_("\\P{Cn}") {}
  bool operator()(char32_t c) {
    if (c >= 0xD800 && c <= 0xDFFF) return false;
    auto it = cache_.find(c);
    if (it == cache_.end()) it = cache_.emplace(c, re_.full_match(c)).first;
    return it->second;
  }
  std::string filter(std::string_view s) {
    std::string out;
    for (char32_t c : code_points(s))
      if ((*this)(c)) strata::tok::uni::append_utf8(out, c);
    return out;
  }

 private:
  Onig re_;
  std::map<char32_t, bool> cache_;
};

std::string escaped(std::string_view s) {
  std::string out;
  for (char32_t c : code_points(s)) {
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[16];
      std::snprintf(buf, sizeof buf, c < 0x10000 ? "\\u%04X" : "\\U%08X", static_cast<unsigned>(c));
      out += buf;
    }
  }
  return out;
}

std::string show(const Pieces& p, std::string_view s) {
  std::string out;
  for (const Match& m : p)
    if (m.is_match) out += "[" + escaped(s.substr(m.b, m.e - m.b)) + "]";
  return out.empty() ? "(no match)" : out;
}

// Characters worth mixing into random texts: those case folding, \s, \w, \d, \b and the
// general categories treat specially, plus the pattern's own characters.
std::vector<char32_t> character_pool(std::string_view pattern) {
  std::vector<char32_t> pool;
  for (char32_t c = 0x20; c < 0x7F; ++c) pool.push_back(c);
  for (char32_t c : {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x85, 0xA0, 0x1680, 0x2000, 0x2028, 0x2029, 0x202F, 0x3000,
                     0x200B, 0xFEFF, 0x17F, 0x212A, 0x2126, 0xDF, 0x1E9E, 0x130, 0x131, 0x3A3, 0x3C3, 0x3C2,
                     0x1C5, 0x3B8, 0x3D1, 0x3F4, 0xB5, 0x3BC, 0xFB00, 0xE9, 0x301, 0x4E2D, 0xAC00, 0x1F600,
                     0xFF21, 0x663, 0xB2, 0x216B, 0xBD, 0x20AC, 0x203F, 0x2581, 0x5F, 0x2019, 0x10400, 0x10428,
                     0x1E900, 0x1E922, 0xA7AE, 0x26A, 0x1F88, 0x1F80, 0x390, 0x1FD3, 0x345, 0x399, 0x3B9})
    pool.push_back(c);
  for (char32_t c : code_points(pattern)) pool.push_back(c);
  return pool;
}

struct Totals {
  size_t patterns = 0, unsupported = 0, onig_rejects = 0, cases = 0, onig_gave_up = 0, strata_gave_up = 0,
         differences = 0;
  std::map<std::string, size_t> by_pattern;
};

void compare(const std::string& pattern, const std::string& text, const strata::tok::Regex& mine, const Onig& theirs,
             Totals& t) {
  Pieces a, b;
  ++t.cases;
  if (!theirs.find_matches(text, b)) {
    ++t.onig_gave_up;
    return;
  }
  try {
    mine.find_matches(text, a);
  } catch (const strata::Error&) {
    ++t.strata_gave_up;
    return;
  }
  const auto same = [](const Match& x, const Match& y) { return x.b == y.b && x.e == y.e && x.is_match == y.is_match; };
  if (a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), same)) return;
  ++t.differences;
  if (++t.by_pattern[pattern] <= 3)  // the first few of each pattern; the count comes at the end
    std::printf("DIFFERENCE pattern '%s' text '%s'\n  strata:    %s\n  oniguruma: %s\n", escaped(pattern).c_str(),
                escaped(text).c_str(), show(a, text).c_str(), show(b, text).c_str());
}

// Character classes one character at a time: every escape and general category, bare and in
// brackets, with and without (?i), against every character Unicode 14 assigns except inside
// the large blocks of one category (CJK ideographs, Hangul syllables, Tangut, private use).
void compare_classes(Assigned& assigned, Totals& t) {
  std::vector<std::string> patterns = {"\\w", "\\W", "[\\w]", "[^\\w]", "\\s", "\\S", "[\\s]", "\\d", "\\D",
                                       "\\h", "\\H", ".", "[^a-z]", "(?i)[a-z]", "(?i)[^a-z]", "(?i)k", "(?i)s",
                                       "(?i)\u00DF", "(?i)\u0130", "(?i)i", "(?i)[\u017F]", "(?i)\u03C3", "(?i)[^\u03A3]",
                                       "(?i)\\w", "(?i)[\\W]", "a\\b", "\\b."};
  for (const char* cat : {"L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No", "P", "Pc",
                          "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk", "So", "Z", "Zs", "Zl", "Zp", "C",
                          "Cc", "Cf", "Co", "Cn"}) {
    patterns.push_back(std::string("\\p{") + cat + "}");
    patterns.push_back(std::string("[^\\p{") + cat + "}]");
  }
  patterns.push_back("(?i)\\p{Lu}");
  patterns.push_back("(?i)\\p{Ll}");
  std::vector<std::string> chars;
  for (char32_t c = 0; c < 0x110000; ++c) {
    if ((c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xAC00 && c <= 0xD7A3) ||
        (c >= 0xE000 && c <= 0xF8FF) || (c >= 0x17000 && c <= 0x18CFF) || c >= 0x20000)
      continue;
    if (!assigned(c)) continue;
    std::string s;
    strata::tok::uni::append_utf8(s, c);
    chars.push_back(std::move(s));
  }
  std::printf("class table: %zu classes x %zu characters\n", patterns.size(), chars.size());
  for (const std::string& pattern : patterns) {
    const strata::tok::Regex mine(pattern, "class table");
    const Onig theirs(pattern);
    for (const std::string& c : chars) compare(pattern, c, mine, theirs, t);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR STRINGS_JSONL\n", argv[0]);
    return 2;
  }
  OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
  onig_initialize(encodings, 1);
  Assigned assigned;

  std::vector<std::string> texts;
  std::istringstream lines(read_all(argv[2]));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("text")) texts.push_back(assigned.filter(j["text"].get<std::string>()));
  }
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(argv[1])) files.push_back(e.path());
  std::sort(files.begin(), files.end());

  Totals t;
  compare_classes(assigned, t);
  std::mt19937 rng(1234);
  for (const auto& f : files) {
    const std::string input = read_all(f);
    const size_t nul = input.find('\0');
    // The fuzz target's own format (fuzz/regex_match.cpp); patterns must be valid UTF-8 for
    // either engine to read them the same way.
    const std::string pattern = input.substr(0, nul);
    if (!strata::tok::uni::is_valid_utf8(pattern)) continue;
    ++t.patterns;
    std::unique_ptr<strata::tok::Regex> mine;
    try {
      mine = std::make_unique<strata::tok::Regex>(pattern, f.filename().string());
    } catch (const strata::Error& e) {
      ++t.unsupported;  // strata refuses what it does not implement, with an error naming it
      continue;
    }
    const Onig theirs(pattern);
    if (!theirs.ok()) {
      ++t.onig_rejects;
      ++t.differences;
      std::printf("DIFFERENCE pattern '%s': strata compiles it, Oniguruma refuses it: %s\n", escaped(pattern).c_str(),
                  theirs.error().c_str());
      continue;
    }
    std::vector<std::string> cases;
    cases.push_back(assigned.filter(nul == std::string::npos ? input : input.substr(nul + 1)));
    cases.insert(cases.end(), texts.begin(), texts.end());
    std::vector<char32_t> pool;
    for (char32_t c : character_pool(pattern))
      if (assigned(c)) pool.push_back(c);
    for (int k = 0; k < 300; ++k) {
      std::string s;
      const size_t len = rng() % 16;
      for (size_t i = 0; i < len; ++i) strata::tok::uni::append_utf8(s, pool[rng() % pool.size()]);
      cases.push_back(std::move(s));
    }
    for (const std::string& text : cases) compare(pattern, text, *mine, theirs, t);
  }
  std::printf("regex oracle: %zu patterns (%zu refused by strata as unsupported), %zu cases, %zu differences "
              "(%zu patterns only strata accepts); skipped: %zu cases over Oniguruma's retry limit, %zu over "
              "strata's backtracking limit\n",
              t.patterns, t.unsupported, t.cases, t.differences, t.onig_rejects, t.onig_gave_up, t.strata_gave_up);
  for (const auto& [pattern, n] : t.by_pattern) std::printf("  %zu differences: '%s'\n", n, escaped(pattern).c_str());
  onig_end();
  return t.differences == 0 ? 0 : 1;
}
