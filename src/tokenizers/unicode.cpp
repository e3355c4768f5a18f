#include "tokenizers/unicode.h"

#include <utf8proc.h>

#include <algorithm>

namespace strata::tok::uni {

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

namespace {

// Length of the well-formed prefix of the sequence at s[i] (Unicode Table 3-7), and whether it
// is a complete character. An invalid lead byte gives (1, false).
std::pair<size_t, bool> scan_sequence(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return {1, true};
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {1, false};
  }
  size_t n = 1;
  while (n < need && i + n < s.size()) {
    const auto b = static_cast<unsigned char>(s[i + n]);
    const bool ok = n == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) break;
    ++n;
  }
  return {n, n == need};
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const auto [n, ok] = scan_sequence(s, i);
    if (!ok) return false;
    i += n;
  }
  return true;
}

std::string make_valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    const auto [n, ok] = scan_sequence(s, i);
    if (ok)
      out.append(s.substr(i, n));
    else
      out += "\xEF\xBF\xBD";
    i += n;
  }
  return out;
}

bool is_whitespace_slow(char32_t c) {
  // The White_Space property (PropList.txt), which utf8proc does not expose.
  switch (c) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

int category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

namespace {

struct AgeRange {
  char32_t lo, hi;
  int age;
};
constexpr AgeRange kAges[] = {
#include "tokenizers/unicode_age.inc"
};

// Whether c was assigned by Unicode `version` (8 or 9); see make_unicode_age.pl for why.
bool assigned_by(char32_t c, int version) {
  if (c < 0x378) return true;
  const AgeRange* end = std::end(kAges);
  const AgeRange* r =
      std::upper_bound(std::begin(kAges), end, c, [](char32_t v, const AgeRange& a) { return v < a.lo; });
  return r != std::begin(kAges) && c <= (r - 1)->hi && (r - 1)->age <= version;
}

// The general category as of Unicode `version` (8 or 9): unassigned if assigned later, and the
// few characters whose category changed since (UCD history) get their old one back.
int category_as_of(char32_t c, int version) {
  if (!assigned_by(c, version)) return UTF8PROC_CATEGORY_CN;
  switch (c) {
    case 0x166D:
    case 0x111C9:
      return UTF8PROC_CATEGORY_PO;  // now So, Mn
    case 0x1CF2:
    case 0x1CF3:
    case 0xA9BD:
      return UTF8PROC_CATEGORY_MC;  // now Lo, Lo, Mn
    case 0x1734:
      return UTF8PROC_CATEGORY_MN;  // now Mc
    case 0x1885:
    case 0x1886:
      return version < 9 ? UTF8PROC_CATEGORY_LO : UTF8PROC_CATEGORY_MN;
    default:
      return category(c);
  }
}

}  // namespace

bool is_other(char32_t c) {
  if (c < 0x80) return c < 0x20 || c == 0x7F;
  const int k = category_as_of(c, 8);
  return k == UTF8PROC_CATEGORY_CC || k == UTF8PROC_CATEGORY_CF || k == UTF8PROC_CATEGORY_CO;
}

bool is_punctuation(char32_t c) {
  if (c < 0x80)
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
  const int k = category_as_of(c, 8);
  return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

bool is_mark_nonspacing(char32_t c) { return c >= 0x300 && category_as_of(c, 8) == UTF8PROC_CATEGORY_MN; }

bool is_combining_mark(char32_t c) {
  if (c < 0x300) return false;
  const int k = category_as_of(c, 9);
  return k >= UTF8PROC_CATEGORY_MN && k <= UTF8PROC_CATEGORY_ME;
}

bool is_letter(char32_t c) {
  if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
  const int k = category(c);
  return k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO;
}

bool is_number(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  const int k = category(c);
  return k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO;
}

bool is_word_char(char32_t c) {
  if (c < 0x80) return is_letter(c) || is_number(c) || c == '_';
  const int k = category(c);
  if ((k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_ND) || k == UTF8PROC_CATEGORY_NL ||
      k == UTF8PROC_CATEGORY_PC)
    return true;
  // Join_Control, and the So letters that are Other_Alphabetic (circled / squared Latin).
  return c == 0x200C || c == 0x200D || (c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) ||
         (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189);
}

bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

int to_lowercase(char32_t c, char32_t out[2]) {
  if (c < 0x80) {
    out[0] = (c >= 'A' && c <= 'Z') ? c + 32 : c;
    return 1;
  }
  if (c == 0x130) {  // SpecialCasing: İ -> i + combining dot above
    out[0] = 'i';
    out[1] = 0x307;
    return 2;
  }
  out[0] = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
  return 1;
}

namespace {

// Normalization data as of Unicode 9.0 (HF's unicode-normalization-alignments): characters
// assigned later are starters without decompositions there.
int ccc(char32_t c) {
  return c < 0x300 || !assigned_by(c, 9) ? 0 : utf8proc_get_property(static_cast<utf8proc_int32_t>(c))->combining_class;
}

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr int kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

// Canonical composition of a pair, or 0.
char32_t compose_pair(char32_t a, char32_t b) {
  if (!assigned_by(a, 9) || !assigned_by(b, 9)) return 0;
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  // UTF8PROC_STABLE makes utf8proc honour the composition exclusions.
  utf8proc_int32_t buf[2] = {static_cast<utf8proc_int32_t>(a), static_cast<utf8proc_int32_t>(b)};
  if (utf8proc_normalize_utf32(buf, 2, static_cast<utf8proc_option_t>(UTF8PROC_COMPOSE | UTF8PROC_STABLE)) == 1)
    return static_cast<char32_t>(buf[0]);
  return 0;
}

// Characters below the threshold are their own NFD / NFC / NFKD / NFKC and are starters.
char32_t stable_below(bool compat, bool compose) { return compat ? 0xA0 : compose ? 0x300 : 0xC0; }

void decompose(std::string_view s, bool compat, std::vector<CharChange>& out) {
  const char32_t stable = stable_below(compat, false);
  const utf8proc_option_t opts = static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0));
  utf8proc_int32_t buf[32];
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const char32_t c = decode(s, i, &len);
    i += len;
    if (c < stable || !assigned_by(c, 9)) {
      out.push_back({c, 0});
      continue;
    }
    int bound = 0;
    const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), buf, 32, opts, &bound);
    if (n <= 0) {
      out.push_back({c, 0});
      continue;
    }
    for (utf8proc_ssize_t k = 0; k < n; ++k) out.push_back({static_cast<char32_t>(buf[k]), k == 0 ? 0 : 1});
  }
  // Canonical ordering: stable sort of every run of non-starters by combining class.
  for (size_t i = 0; i < out.size();) {
    if (ccc(out[i].c) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < out.size() && ccc(out[j].c) != 0) ++j;
    std::stable_sort(out.begin() + i, out.begin() + j,
                     [](const CharChange& a, const CharChange& b) { return ccc(a.c) < ccc(b.c); });
    i = j;
  }
}

// The Recompositions iterator of unicode-normalization-alignments, over a decomposed sequence.
void recompose(const std::vector<CharChange>& in, std::vector<CharChange>& out) {
  bool have_composee = false;
  CharChange composee{};
  int last_ccc = -1;  // -1: none
  std::vector<CharChange> buffer;
  for (const CharChange& cc : in) {
    const int cls = ccc(cc.c);
    if (!have_composee) {
      if (cls != 0) {
        out.push_back(cc);
        continue;
      }
      composee = cc;
      have_composee = true;
      continue;
    }
    if (last_ccc < 0) {
      if (const char32_t r = compose_pair(composee.c, cc.c)) {
        composee = {r, composee.change + cc.change - 1};
        continue;
      }
      if (cls == 0) {
        out.push_back(composee);
        composee = cc;
        continue;
      }
      buffer.push_back(cc);
      last_ccc = cls;
      continue;
    }
    if (last_ccc >= cls) {  // blocked from the composee
      if (cls == 0) {
        out.push_back(composee);
        out.insert(out.end(), buffer.begin(), buffer.end());
        buffer.clear();
        composee = cc;
        last_ccc = -1;
        continue;
      }
      buffer.push_back(cc);
      last_ccc = cls;
      continue;
    }
    if (const char32_t r = compose_pair(composee.c, cc.c)) {
      composee = {r, composee.change + cc.change - 1};
      continue;
    }
    buffer.push_back(cc);
    last_ccc = cls;
  }
  if (have_composee) out.push_back(composee);
  out.insert(out.end(), buffer.begin(), buffer.end());
}

}  // namespace

bool nf_is_identity(std::string_view s, bool compat, bool compose) {
  const char32_t stable = stable_below(compat, compose);
  for (size_t i = 0; i < s.size();) {
    size_t len;
    if (decode(s, i, &len) >= stable) return false;
    i += len;
  }
  return true;
}

void normalize_nf(std::string_view s, bool compat, bool compose, std::vector<CharChange>& out) {
  out.clear();
  if (!compose) {
    decompose(s, compat, out);
    return;
  }
  std::vector<CharChange> decomposed;
  decompose(s, compat, decomposed);
  recompose(decomposed, out);
}

std::vector<size_t> grapheme_bounds(std::string_view s) {
  std::vector<size_t> bounds;
  utf8proc_int32_t state = 0, prev = -1;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const auto c = static_cast<utf8proc_int32_t>(decode(s, i, &len));
    if (prev < 0 || utf8proc_grapheme_break_stateful(prev, c, &state)) bounds.push_back(i);
    prev = c;
    i += len;
  }
  bounds.push_back(s.size());
  return bounds;
}

}  // namespace strata::tok::uni
