#include "tokenizers/regex.h"

#include <utf8proc.h>

#include <cctype>
#include <unordered_map>

#include "util/error.h"

namespace strata::tok {

namespace {

enum class Op : uint8_t { Char, Any, Class, Split, Jmp, Match, Assert, Look, Atomic, Mark, Progress };
enum Assertion : int { kBol, kEol, kBos, kEos, kEosNl, kWordBoundary, kNotWordBoundary };

char32_t fold(char32_t c);
const std::vector<char32_t>& folding_to(char32_t f);

// Oniguruma's Word inside a bracket class ([\w], [^\w\s]): uni::is_word_char (Rust's \w)
// less the joiners U+200C / U+200D, which Oniguruma's Word property leaves out.
bool is_class_word(char32_t c) { return c != 0x200C && c != 0x200D && uni::is_word_char(c); }

// Oniguruma's bare \w, \W and \b: the same, plus the Latin-1 superscripts and fractions
// (U+00B2, U+00B3, U+00B9, U+00BC-U+00BE), which its Latin-1 ctype table marks as word
// characters while its Unicode Word property (used in bracket classes) does not.
bool is_word(char32_t c) { return is_class_word(c) || c == 0xB2 || c == 0xB3 || c == 0xB9 || (c >= 0xBC && c <= 0xBE); }

struct ClassItem {
  enum Kind : uint8_t { Range, Categories, Space, Word, BareWord, Hex } kind;  // BareWord: \w outside [...]
  bool neg;
  char32_t lo, hi;
  uint32_t cats;  // bit k: utf8proc category k
};

struct CharClass {
  bool negated = false;
  std::vector<ClassItem> items;

  bool has(char32_t c) const { return contains(c) != negated; }

  // Under (?i) a character is in the class when any character of its case-fold orbit is in the
  // class before negation, as Oniguruma closes a class over case folding before negating it.
  bool has_folded(char32_t c) const {
    const char32_t f = fold(c);
    bool in = contains(c) || contains(f);
    for (char32_t o : folding_to(f)) in = in || contains(o);
    return in != negated;
  }

 private:
  bool contains(char32_t c) const {
    for (const ClassItem& it : items) {
      bool m = false;
      switch (it.kind) {
        case ClassItem::Range:
          m = c >= it.lo && c <= it.hi;
          break;
        case ClassItem::Categories:
          m = (it.cats >> uni::category(c)) & 1u;
          break;
        case ClassItem::Space:
          m = uni::is_whitespace(c);
          break;
        case ClassItem::Word:
          m = is_class_word(c);
          break;
        case ClassItem::BareWord:
          m = is_word(c);
          break;
        case ClassItem::Hex:
          m = (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
          break;
      }
      if (m != it.neg) return true;
    }
    return false;
  }
};

struct Inst {
  Op op;
  bool icase = false;
  char32_t c = 0;
  int x = 0, y = 0;
};

struct Node {
  enum Kind { Empty, Char, Any, Class, Cat, Alt, Repeat, Look, Atomic, Assert } kind;
  char32_t c = 0;
  bool icase = false;
  int cls = 0;
  std::vector<std::unique_ptr<Node>> kids;
  int min = 0, max = -1;  // Repeat; max -1: unbounded
  bool greedy = true, possessive = false;
  bool neg = false;  // Look
  int assertion = 0;
};
using NodeP = std::unique_ptr<Node>;

NodeP node(Node::Kind k) {
  auto n = std::make_unique<Node>();
  n->kind = k;
  return n;
}

// Unicode simple case folding (CaseFolding.txt, statuses C and S), which Oniguruma applies
// under (?i): s, S and U+017F fold together, as do k, K and the Kelvin sign U+212A, which
// lower-casing alone does not join. utf8proc exposes full folding; where that is one code point
// it is the simple folding too. Where it is several (U+00DF -> "ss"), the simple folding is
// the lower-case mapping, except for U+0130, which has none and folds to itself.
char32_t fold(char32_t c) {
  utf8proc_int32_t out[4];
  int boundary = 0;
  const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), out, 4,
                                                     UTF8PROC_CASEFOLD, &boundary);
  if (n == 1) return static_cast<char32_t>(out[0]);
  if (c == 0x130) return c;
  return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
}

// The characters that fold to `f` other than f itself (f's case-fold orbit), for case-blind
// class membership: [a-z] under (?i) takes U+017F and U+212A because s and k are in it. Case
// mappings exist only below U+20000, so that is all the table scans, once.
const std::vector<char32_t>& folding_to(char32_t f) {
  static const std::unordered_map<char32_t, std::vector<char32_t>> inverse = [] {
    std::unordered_map<char32_t, std::vector<char32_t>> m;
    for (char32_t c = 0; c < 0x20000; ++c)
      if (const char32_t f = fold(c); f != c) m[f].push_back(c);
    return m;
  }();
  static const std::vector<char32_t> none;
  const auto it = inverse.find(f);
  return it == inverse.end() ? none : it->second;
}

}  // namespace

struct Regex::Program {
  std::vector<std::vector<Inst>> progs;  // progs[0]: the pattern; others: lookaround / atomic bodies
  std::vector<CharClass> classes;
  int n_marks = 0;
  std::string name;  // "<where>: regex '<pattern>'", how errors start
};

namespace {

constexpr uint32_t cat_bit(int k) { return 1u << k; }
constexpr uint32_t kLetters = cat_bit(UTF8PROC_CATEGORY_LU) | cat_bit(UTF8PROC_CATEGORY_LL) |
                              cat_bit(UTF8PROC_CATEGORY_LT) | cat_bit(UTF8PROC_CATEGORY_LM) |
                              cat_bit(UTF8PROC_CATEGORY_LO);
constexpr uint32_t kMarks =
    cat_bit(UTF8PROC_CATEGORY_MN) | cat_bit(UTF8PROC_CATEGORY_MC) | cat_bit(UTF8PROC_CATEGORY_ME);
constexpr uint32_t kNumbers =
    cat_bit(UTF8PROC_CATEGORY_ND) | cat_bit(UTF8PROC_CATEGORY_NL) | cat_bit(UTF8PROC_CATEGORY_NO);
constexpr uint32_t kPunct = cat_bit(UTF8PROC_CATEGORY_PC) | cat_bit(UTF8PROC_CATEGORY_PD) |
                            cat_bit(UTF8PROC_CATEGORY_PS) | cat_bit(UTF8PROC_CATEGORY_PE) |
                            cat_bit(UTF8PROC_CATEGORY_PI) | cat_bit(UTF8PROC_CATEGORY_PF) |
                            cat_bit(UTF8PROC_CATEGORY_PO);
constexpr uint32_t kSymbols = cat_bit(UTF8PROC_CATEGORY_SM) | cat_bit(UTF8PROC_CATEGORY_SC) |
                              cat_bit(UTF8PROC_CATEGORY_SK) | cat_bit(UTF8PROC_CATEGORY_SO);
constexpr uint32_t kSeparators =
    cat_bit(UTF8PROC_CATEGORY_ZS) | cat_bit(UTF8PROC_CATEGORY_ZL) | cat_bit(UTF8PROC_CATEGORY_ZP);
constexpr uint32_t kOthers = cat_bit(UTF8PROC_CATEGORY_CC) | cat_bit(UTF8PROC_CATEGORY_CF) |
                             cat_bit(UTF8PROC_CATEGORY_CS) | cat_bit(UTF8PROC_CATEGORY_CO) |
                             cat_bit(UTF8PROC_CATEGORY_CN);

// General-category property names (short and long, compared loosely as Oniguruma does).
bool category_mask(std::string name, uint32_t* mask) {
  std::string key;
  for (char ch : name)
    if (ch != '_' && ch != ' ' && ch != '-') key += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  static const std::pair<const char*, uint32_t> kNames[] = {
      {"l", kLetters},
      {"letter", kLetters},
      {"lu", cat_bit(UTF8PROC_CATEGORY_LU)},
      {"uppercaseletter", cat_bit(UTF8PROC_CATEGORY_LU)},
      {"ll", cat_bit(UTF8PROC_CATEGORY_LL)},
      {"lowercaseletter", cat_bit(UTF8PROC_CATEGORY_LL)},
      {"lt", cat_bit(UTF8PROC_CATEGORY_LT)},
      {"titlecaseletter", cat_bit(UTF8PROC_CATEGORY_LT)},
      {"lm", cat_bit(UTF8PROC_CATEGORY_LM)},
      {"modifierletter", cat_bit(UTF8PROC_CATEGORY_LM)},
      {"lo", cat_bit(UTF8PROC_CATEGORY_LO)},
      {"otherletter", cat_bit(UTF8PROC_CATEGORY_LO)},
      {"lc", cat_bit(UTF8PROC_CATEGORY_LU) | cat_bit(UTF8PROC_CATEGORY_LL) | cat_bit(UTF8PROC_CATEGORY_LT)},
      {"m", kMarks},
      {"mark", kMarks},
      {"combiningmark", kMarks},
      {"mn", cat_bit(UTF8PROC_CATEGORY_MN)},
      {"nonspacingmark", cat_bit(UTF8PROC_CATEGORY_MN)},
      {"mc", cat_bit(UTF8PROC_CATEGORY_MC)},
      {"spacingmark", cat_bit(UTF8PROC_CATEGORY_MC)},
      {"me", cat_bit(UTF8PROC_CATEGORY_ME)},
      {"enclosingmark", cat_bit(UTF8PROC_CATEGORY_ME)},
      {"n", kNumbers},
      {"number", kNumbers},
      {"nd", cat_bit(UTF8PROC_CATEGORY_ND)},
      {"decimalnumber", cat_bit(UTF8PROC_CATEGORY_ND)},
      {"digit", cat_bit(UTF8PROC_CATEGORY_ND)},
      {"nl", cat_bit(UTF8PROC_CATEGORY_NL)},
      {"letternumber", cat_bit(UTF8PROC_CATEGORY_NL)},
      {"no", cat_bit(UTF8PROC_CATEGORY_NO)},
      {"othernumber", cat_bit(UTF8PROC_CATEGORY_NO)},
      {"p", kPunct},
      {"punctuation", kPunct},
      {"punct", kPunct},
      {"pc", cat_bit(UTF8PROC_CATEGORY_PC)},
      {"connectorpunctuation", cat_bit(UTF8PROC_CATEGORY_PC)},
      {"pd", cat_bit(UTF8PROC_CATEGORY_PD)},
      {"dashpunctuation", cat_bit(UTF8PROC_CATEGORY_PD)},
      {"ps", cat_bit(UTF8PROC_CATEGORY_PS)},
      {"openpunctuation", cat_bit(UTF8PROC_CATEGORY_PS)},
      {"pe", cat_bit(UTF8PROC_CATEGORY_PE)},
      {"closepunctuation", cat_bit(UTF8PROC_CATEGORY_PE)},
      {"pi", cat_bit(UTF8PROC_CATEGORY_PI)},
      {"initialpunctuation", cat_bit(UTF8PROC_CATEGORY_PI)},
      {"pf", cat_bit(UTF8PROC_CATEGORY_PF)},
      {"finalpunctuation", cat_bit(UTF8PROC_CATEGORY_PF)},
      {"po", cat_bit(UTF8PROC_CATEGORY_PO)},
      {"otherpunctuation", cat_bit(UTF8PROC_CATEGORY_PO)},
      {"s", kSymbols},
      {"symbol", kSymbols},
      {"sm", cat_bit(UTF8PROC_CATEGORY_SM)},
      {"mathsymbol", cat_bit(UTF8PROC_CATEGORY_SM)},
      {"sc", cat_bit(UTF8PROC_CATEGORY_SC)},
      {"currencysymbol", cat_bit(UTF8PROC_CATEGORY_SC)},
      {"sk", cat_bit(UTF8PROC_CATEGORY_SK)},
      {"modifiersymbol", cat_bit(UTF8PROC_CATEGORY_SK)},
      {"so", cat_bit(UTF8PROC_CATEGORY_SO)},
      {"othersymbol", cat_bit(UTF8PROC_CATEGORY_SO)},
      {"z", kSeparators},
      {"separator", kSeparators},
      {"zs", cat_bit(UTF8PROC_CATEGORY_ZS)},
      {"spaceseparator", cat_bit(UTF8PROC_CATEGORY_ZS)},
      {"zl", cat_bit(UTF8PROC_CATEGORY_ZL)},
      {"lineseparator", cat_bit(UTF8PROC_CATEGORY_ZL)},
      {"zp", cat_bit(UTF8PROC_CATEGORY_ZP)},
      {"paragraphseparator", cat_bit(UTF8PROC_CATEGORY_ZP)},
      {"c", kOthers},
      {"other", kOthers},
      {"cc", cat_bit(UTF8PROC_CATEGORY_CC)},
      {"control", cat_bit(UTF8PROC_CATEGORY_CC)},
      {"cntrl", cat_bit(UTF8PROC_CATEGORY_CC)},
      {"cf", cat_bit(UTF8PROC_CATEGORY_CF)},
      {"format", cat_bit(UTF8PROC_CATEGORY_CF)},
      {"cs", cat_bit(UTF8PROC_CATEGORY_CS)},
      {"surrogate", cat_bit(UTF8PROC_CATEGORY_CS)},
      {"co", cat_bit(UTF8PROC_CATEGORY_CO)},
      {"privateuse", cat_bit(UTF8PROC_CATEGORY_CO)},
      {"cn", cat_bit(UTF8PROC_CATEGORY_CN)},
      {"unassigned", cat_bit(UTF8PROC_CATEGORY_CN)},
  };
  for (const auto& [n, m] : kNames)
    if (key == n) {
      *mask = m;
      return true;
    }
  return false;
}

class Parser {
 public:
  Parser(std::string_view pattern, const std::string& where, Regex::Program& prog)
      : pattern_(pattern), where_(where), prog_(prog) {
    // uni::decode trusts its input; a JSON parser hands valid UTF-8, a caller might not.
    if (!uni::is_valid_utf8(pattern)) error("not valid UTF-8");
    for (size_t i = 0; i < pattern.size();) {
      size_t len;
      p_.push_back(uni::decode(pattern, i, &len));
      i += len;
    }
  }

  NodeP parse() {
    NodeP n = alternation();
    if (i_ < p_.size()) error("unmatched ')'");
    return n;
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    fail(where_, ": regex '", pattern_, "': ", what, " (at character ", i_, ")");
  }
  bool at_end() const { return i_ >= p_.size(); }
  char32_t peek() const { return p_[i_]; }

  NodeP alternation() {
    std::vector<NodeP> alts;
    const bool saved = icase_;
    alts.push_back(concatenation());
    while (!at_end() && peek() == '|') {
      ++i_;
      alts.push_back(concatenation());
    }
    icase_ = saved;
    if (alts.size() == 1) return std::move(alts[0]);
    NodeP n = node(Node::Alt);
    n->kids = std::move(alts);
    return n;
  }

  NodeP concatenation() {
    NodeP n = node(Node::Cat);
    while (!at_end() && peek() != '|' && peek() != ')') {
      NodeP a = atom();
      if (!a) continue;  // a flag group such as (?i)
      n->kids.push_back(quantified(std::move(a)));
    }
    return n;
  }

  // {n}, {n,}, {n,m}, {,m}; false (and nothing consumed) when this '{' is a literal.
  bool interval(int* min, int* max) {
    size_t j = i_ + 1;
    auto number = [&](int* out) {
      size_t start = j;
      long v = 0;
      while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9' && v < 100000) v = v * 10 + (p_[j++] - '0');
      *out = static_cast<int>(v);
      return j > start;
    };
    int lo = 0, hi = -1;
    const bool has_lo = number(&lo);
    if (j < p_.size() && p_[j] == ',') {
      ++j;
      if (!number(&hi)) hi = -1;
      if (!has_lo && hi < 0) return false;
    } else {
      if (!has_lo) return false;
      hi = lo;
    }
    if (j >= p_.size() || p_[j] != '}') return false;
    if (hi >= 0 && hi < lo) error("bad repeat range");
    if (lo > 1000 || hi > 1000) error("repeat count above 1000");
    i_ = j + 1;
    *min = lo;
    *max = hi;
    return true;
  }

  NodeP quantified(NodeP a) {
    int stacked = 0;
    while (!at_end()) {
      int min, max;
      const char32_t q = peek();
      if (q == '*') {
        min = 0, max = -1, ++i_;
      } else if (q == '+') {
        min = 1, max = -1, ++i_;
      } else if (q == '?') {
        min = 0, max = 1, ++i_;
      } else if (q == '{' && interval(&min, &max)) {
      } else {
        break;
      }
      if (a->kind == Node::Assert || a->kind == Node::Look) error("quantifier after an assertion");
      NodeP r = node(Node::Repeat);
      r->min = min;
      r->max = max;
      if (!at_end() && peek() == '?') {
        r->greedy = false;
        ++i_;
      } else if (!at_end() && peek() == '+' && q != '{') {
        r->possessive = true;
        ++i_;
      }
      r->kids.push_back(std::move(a));
      a = std::move(r);
      // Stacked quantifiers (a**?{2}...) nest too.
      if (++stacked > kMaxDepth) error("more than " + std::to_string(kMaxDepth) + " quantifiers in a row");
    }
    return a;
  }

  NodeP literal(char32_t c) {
    NodeP n = node(Node::Char);
    n->c = c;
    n->icase = icase_;
    return n;
  }

  NodeP class_node(CharClass cls) {
    NodeP n = node(Node::Class);
    n->cls = static_cast<int>(prog_.classes.size());
    n->icase = icase_;
    prog_.classes.push_back(std::move(cls));
    return n;
  }

  NodeP assertion(int kind) {
    NodeP n = node(Node::Assert);
    n->assertion = kind;
    return n;
  }

  NodeP group() {
    ++i_;  // '('
    // Parsing, compiling and freeing recurse once per level: a bound keeps a hostile pattern
    // from exhausting the stack (Oniguruma's own parse depth limit is 4096).
    if (++depth_ > kMaxDepth) error("groups nested more than " + std::to_string(kMaxDepth) + " deep");
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth_};
    Node::Kind kind = Node::Cat;
    bool neg = false;
    if (!at_end() && peek() == '?') {
      ++i_;
      if (at_end()) error("unterminated group");
      const char32_t k = p_[i_++];
      if (k == ':') {
      } else if (k == '=' || k == '!') {
        kind = Node::Look;
        neg = k == '!';
      } else if (k == '>') {
        kind = Node::Atomic;
      } else if (k == '<' && !at_end() && peek() != '=' && peek() != '!') {
        while (!at_end() && peek() != '>') ++i_;  // named group: the name does not matter here
        if (at_end()) error("unterminated group name");
        ++i_;
      } else if (k == 'i' || k == '-' || k == 'm' || k == 'x') {
        --i_;
        bool on = true, new_icase = icase_;
        while (!at_end() && peek() != ')' && peek() != ':') {
          const char32_t f = p_[i_++];
          if (f == '-')
            on = false;
          else if (f == 'i')
            new_icase = on;
          else
            error(std::string("unsupported flag '") + static_cast<char>(f) + "'");
        }
        if (at_end()) error("unterminated group");
        if (p_[i_++] == ')') {  // (?i): applies to the rest of the enclosing group
          icase_ = new_icase;
          return nullptr;
        }
        const bool saved = icase_;
        icase_ = new_icase;
        NodeP body = alternation();
        icase_ = saved;
        if (at_end() || peek() != ')') error("missing ')'");
        ++i_;
        return body;
      } else {
        error("unsupported group syntax (lookbehind, conditionals and the like are not supported)");
      }
    }
    NodeP body = alternation();
    if (at_end() || peek() != ')') error("missing ')'");
    ++i_;
    if (kind == Node::Cat) return body;
    NodeP n = node(kind);
    n->neg = neg;
    n->kids.push_back(std::move(body));
    return n;
  }

  uint32_t hex_digits(size_t max_digits, bool braced) {
    uint32_t v = 0;
    size_t n = 0;
    while (!at_end() && n < max_digits) {
      const char32_t h = peek();
      int d = (h >= '0' && h <= '9')                     ? int(h - '0')
              : ((h | 0x20) >= 'a' && (h | 0x20) <= 'f') ? int((h | 0x20) - 'a' + 10)
                                                         : -1;
      if (d < 0) break;
      v = v * 16 + static_cast<uint32_t>(d);
      ++i_, ++n;
    }
    if (n == 0) error("bad hex escape");
    if (braced) {
      if (at_end() || peek() != '}') error("bad \\x{...} escape");
      ++i_;
    }
    if (v > 0x10FFFF) error("code point out of range");
    return v;
  }

  // An escape after '\\' (already consumed): either one code point (*cp) or a class item.
  bool escape(char32_t* cp, ClassItem* item) {
    if (at_end()) error("trailing backslash");
    const char32_t e = p_[i_++];
    switch (e) {
      case 't':
        *cp = '\t';
        return true;
      case 'n':
        *cp = '\n';
        return true;
      case 'r':
        *cp = '\r';
        return true;
      case 'f':
        *cp = '\f';
        return true;
      case 'v':
        *cp = '\v';
        return true;
      case 'a':
        *cp = 7;
        return true;
      case 'e':
        *cp = 27;
        return true;
      case '0':
        *cp = 0;
        return true;
      case 'x':
        if (!at_end() && peek() == '{') {
          ++i_;
          *cp = hex_digits(8, true);
        } else {
          *cp = hex_digits(2, false);
        }
        return true;
      case 'u':
        *cp = hex_digits(4, false);
        return true;
      case 's':
      case 'S':
        *item = {ClassItem::Space, e == 'S', 0, 0, 0};
        return false;
      case 'w':
      case 'W':
        *item = {ClassItem::Word, e == 'W', 0, 0, 0};
        return false;
      case 'h':
      case 'H':
        *item = {ClassItem::Hex, e == 'H', 0, 0, 0};
        return false;
      case 'd':
      case 'D':
        *item = {ClassItem::Categories, e == 'D', 0, 0, cat_bit(UTF8PROC_CATEGORY_ND)};
        return false;
      case 'p':
      case 'P': {
        bool neg = e == 'P';
        std::string name;
        if (!at_end() && peek() == '{') {
          ++i_;
          if (!at_end() && peek() == '^') {
            neg = !neg;
            ++i_;
          }
          while (!at_end() && peek() != '}') name += static_cast<char>(p_[i_++]);
          if (at_end()) error("unterminated \\p{...}");
          ++i_;
        } else if (!at_end()) {
          name = static_cast<char>(p_[i_++]);
        }
        uint32_t mask;
        if (!category_mask(name, &mask))
          error("unsupported property \\p{" + name + "} (only general categories are supported)");
        *item = {ClassItem::Categories, neg, 0, 0, mask};
        return false;
      }
      default:
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '1' && e <= '9'))
          error(std::string("unsupported escape \\") + static_cast<char>(e));
        *cp = e;
        return true;
    }
  }

  NodeP bracket() {
    ++i_;  // '['
    CharClass cls;
    if (!at_end() && peek() == '^') {
      cls.negated = true;
      ++i_;
    }
    bool first = true;
    while (true) {
      if (at_end()) error("unterminated character class");
      char32_t c = p_[i_];
      if (c == ']' && !first) {
        ++i_;
        break;
      }
      first = false;
      if (c == '[') error("nested classes and POSIX brackets are not supported");
      if (c == '&' && i_ + 1 < p_.size() && p_[i_ + 1] == '&') error("class intersection is not supported");
      ++i_;
      if (c == '\\') {
        ClassItem item;
        if (!escape(&c, &item)) {
          cls.items.push_back(item);
          continue;
        }
      }
      char32_t hi = c;
      if (i_ + 1 < p_.size() && peek() == '-' && p_[i_ + 1] != ']') {
        ++i_;
        hi = p_[i_++];
        if (hi == '\\') {
          ClassItem item;
          if (!escape(&hi, &item)) error("bad class range");
        }
        if (hi < c) error("bad class range");
      }
      cls.items.push_back({ClassItem::Range, false, c, hi, 0});
    }
    return class_node(std::move(cls));
  }

  NodeP atom() {
    const char32_t c = peek();
    switch (c) {
      case '(':
        return group();
      case '[':
        return bracket();
      case '.':
        ++i_;
        return node(Node::Any);
      case '^':
        ++i_;
        return assertion(kBol);
      case '$':
        ++i_;
        return assertion(kEol);
      case '*':
      case '+':
      case '?':
        error("nothing to repeat");
      case '\\': {
        ++i_;
        if (!at_end()) {
          switch (peek()) {
            case 'A':
              ++i_;
              return assertion(kBos);
            case 'z':
              ++i_;
              return assertion(kEos);
            case 'Z':
              ++i_;
              return assertion(kEosNl);
            case 'b':
              ++i_;
              return assertion(kWordBoundary);
            case 'B':
              ++i_;
              return assertion(kNotWordBoundary);
            default:
              break;
          }
        }
        char32_t cp;
        ClassItem item;
        if (escape(&cp, &item)) return literal(cp);
        if (item.kind == ClassItem::Word) item.kind = ClassItem::BareWord;
        CharClass cls;
        cls.items.push_back(item);
        // Oniguruma closes bracket classes over case folding under (?i) ((?i)[\p{Lu}] takes
        // lower-case letters), but not a bare escape: (?i)\p{Lu} stays upper-case only.
        NodeP n = class_node(std::move(cls));
        n->icase = false;
        return n;
      }
      default:
        ++i_;
        return literal(c);
    }
  }

  std::string pattern_;
  const std::string& where_;
  Regex::Program& prog_;
  static constexpr int kMaxDepth = 1000;

  std::u32string p_;
  size_t i_ = 0;
  bool icase_ = false;
  int depth_ = 0;
};

class Compiler {
 public:
  // `error_prefix` is "<where>: regex '<pattern>'", as the parser's errors start.
  Compiler(Regex::Program& prog, std::string error_prefix) : prog_(prog), error_prefix_(std::move(error_prefix)) {}

  int program(const Node& n) {
    const int idx = static_cast<int>(prog_.progs.size());
    prog_.progs.emplace_back();
    std::vector<Inst> code;
    emit(n, code);
    code.push_back({Op::Match});
    prog_.progs[idx] = std::move(code);
    return idx;
  }

 private:
  // Counted while emitting, over every program: counted repeats multiply (x{1000}{1000} is a
  // million copies), so a check after the fact would come after the memory was gone.
  static constexpr size_t kMaxNodes = 200000;

  void emit(const Node& n, std::vector<Inst>& out) {
    if (++emitted_ > kMaxNodes)
      fail(error_prefix_, ": too large once compiled (counted repeats expand it past ", kMaxNodes,
           " nodes)");
    switch (n.kind) {
      case Node::Empty:
        break;
      case Node::Char:
        out.push_back({Op::Char, n.icase, n.icase ? fold(n.c) : n.c});
        break;
      case Node::Any:
        out.push_back({Op::Any});
        break;
      case Node::Class:
        out.push_back({Op::Class, n.icase, 0, n.cls});
        break;
      case Node::Cat:
        for (const NodeP& k : n.kids) emit(*k, out);
        break;
      case Node::Alt: {
        std::vector<size_t> jumps;
        for (size_t k = 0; k < n.kids.size(); ++k) {
          if (k + 1 < n.kids.size()) {
            const size_t split = out.size();
            out.push_back({Op::Split, false, 0, static_cast<int>(split + 1)});
            emit(*n.kids[k], out);
            jumps.push_back(out.size());
            out.push_back({Op::Jmp});
            out[split].y = static_cast<int>(out.size());
          } else {
            emit(*n.kids[k], out);
          }
        }
        for (size_t j : jumps) out[j].x = static_cast<int>(out.size());
        break;
      }
      case Node::Repeat:
        if (n.possessive) {  // an atomic group around the greedy repeat
          const int idx = static_cast<int>(prog_.progs.size());
          prog_.progs.emplace_back();
          std::vector<Inst> code;
          emit_repeat(*n.kids[0], n.min, n.max, true, code);
          code.push_back({Op::Match});
          prog_.progs[idx] = std::move(code);
          out.push_back({Op::Atomic, false, 0, idx});
        } else {
          emit_repeat(*n.kids[0], n.min, n.max, n.greedy, out);
        }
        break;
      case Node::Look:
        out.push_back({Op::Look, false, 0, program(*n.kids[0]), n.neg ? 1 : 0});
        break;
      case Node::Atomic:
        out.push_back({Op::Atomic, false, 0, program(*n.kids[0])});
        break;
      case Node::Assert:
        out.push_back({Op::Assert, false, 0, n.assertion});
        break;
    }
  }

  void emit_repeat(const Node& body, int min, int max, bool greedy, std::vector<Inst>& out) {
    for (int k = 0; k < min; ++k) emit(body, out);
    if (max < 0) {
      // Loop with an empty-iteration check, so (a*)* and the like terminate.
      const int slot = prog_.n_marks++;
      const size_t split = out.size();
      out.push_back({Op::Split});
      out.push_back({Op::Mark, false, 0, slot});
      emit(body, out);
      out.push_back({Op::Progress, false, 0, slot});
      out.push_back({Op::Jmp, false, 0, static_cast<int>(split)});
      set_split(out[split], static_cast<int>(split + 1), static_cast<int>(out.size()), greedy);
      return;
    }
    std::vector<size_t> splits;
    for (int k = min; k < max; ++k) {
      splits.push_back(out.size());
      out.push_back({Op::Split});
      emit(body, out);
    }
    for (size_t s : splits) set_split(out[s], static_cast<int>(s + 1), static_cast<int>(out.size()), greedy);
  }

  static void set_split(Inst& in, int body, int exit, bool greedy) {
    in.x = greedy ? body : exit;
    in.y = greedy ? exit : body;
  }

  Regex::Program& prog_;
  std::string error_prefix_;
  size_t emitted_ = 0;
};

// Backtracking execution over code points.
class Matcher {
 public:
  Matcher(const Regex::Program& prog, const std::u32string& s) : prog_(prog), s_(s), marks_(prog.n_marks, SIZE_MAX) {}

  // Each match attempt (lookarounds inside it included) may take kMaxSteps, as Oniguruma's
  // retry-limit-in-match does; the whole search over a text of n code points gets
  // kSearchSteps + kStepsPerChar * n, far above what real pre-tokenizer patterns take (tens of
  // steps a character) but finite: a pattern that fails slowly at every start position would
  // otherwise take n times the attempt limit.
  void start_attempt() { steps_ = 0; }

  // End of the match of program `p` anchored at `pos`, or -1.
  long run(int p, size_t pos) {
    const std::vector<Inst>& code = prog_.progs[p];
    struct Frame {
      int pc;  // -1: restore marks_[slot] = pos
      int slot;
      size_t pos;
    };
    std::vector<Frame> stack;
    int pc = 0;
    const size_t n = s_.size();
    while (true) {
      if (++steps_ > kMaxSteps || ++search_steps_ > search_budget_)
        fail(prog_.name, ": backtracking limit exceeded on a text of ", s_.size(),
             " characters (the pattern is too ambiguous for this input)");
      const Inst& in = code[pc];
      bool ok = true;
      switch (in.op) {
        case Op::Char:
          ok = pos < n && (in.icase ? fold(s_[pos]) == in.c : s_[pos] == in.c);  // in.c is folded under (?i)
          if (ok) ++pos, ++pc;
          break;
        case Op::Any:
          ok = pos < n && s_[pos] != '\n';
          if (ok) ++pos, ++pc;
          break;
        case Op::Class: {
          const CharClass& cls = prog_.classes[in.x];
          ok = pos < n && (in.icase ? cls.has_folded(s_[pos]) : cls.has(s_[pos]));
          if (ok) ++pos, ++pc;
          break;
        }
        case Op::Split:
          stack.push_back({in.y, 0, pos});
          pc = in.x;
          break;
        case Op::Jmp:
          pc = in.x;
          break;
        case Op::Match:
          return static_cast<long>(pos);
        case Op::Assert:
          ok = check(in.x, pos);
          if (ok) ++pc;
          break;
        case Op::Look:
          ok = (run(in.x, pos) >= 0) != (in.y != 0);
          if (ok) ++pc;
          break;
        case Op::Atomic: {
          const long e = run(in.x, pos);
          ok = e >= 0;
          if (ok) pos = static_cast<size_t>(e), ++pc;
          break;
        }
        case Op::Mark:
          stack.push_back({-1, in.x, marks_[in.x]});
          marks_[in.x] = pos;
          ++pc;
          break;
        case Op::Progress:
          ok = marks_[in.x] != pos;
          if (ok) ++pc;
          break;
      }
      if (ok) continue;
      while (true) {  // backtrack
        if (stack.empty()) return -1;
        const Frame f = stack.back();
        stack.pop_back();
        if (f.pc < 0) {
          marks_[f.slot] = f.pos;
          continue;
        }
        pc = f.pc;
        pos = f.pos;
        break;
      }
    }
  }

 private:
  static constexpr size_t kMaxSteps = 10'000'000;
  static constexpr size_t kSearchSteps = 100'000'000, kStepsPerChar = 10'000;

  bool check(int kind, size_t pos) const {
    const size_t n = s_.size();
    switch (kind) {
      case kBol:
        return pos == 0 || s_[pos - 1] == '\n';
      case kEol:
        return pos == n || s_[pos] == '\n';
      case kBos:
        return pos == 0;
      case kEos:
        return pos == n;
      case kEosNl:
        return pos == n || (pos + 1 == n && s_[pos] == '\n');
      default: {
        const bool before = pos > 0 && is_word(s_[pos - 1]);
        const bool after = pos < n && is_word(s_[pos]);
        return (before != after) == (kind == kWordBoundary);
      }
    }
  }

  const Regex::Program& prog_;
  const std::u32string& s_;
  std::vector<size_t> marks_;
  size_t steps_ = 0, search_steps_ = 0;
  const size_t search_budget_ = kSearchSteps + kStepsPerChar * s_.size();
};

}  // namespace

Regex::Regex(std::string_view pattern, const std::string& where) : prog_(std::make_unique<Program>()) {
  Parser parser(pattern, where, *prog_);
  NodeP root = parser.parse();
  prog_->name = cat(where, ": regex '", pattern, "'");
  Compiler(*prog_, prog_->name).program(*root);  // the first program compiled is progs[0], the pattern
}

Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;
Regex::~Regex() = default;

void Regex::find_matches(std::string_view s, std::vector<Match>& out) const {
  // The tokenizer repairs its input before this; decoding anything else would read past it.
  if (!uni::is_valid_utf8(s)) fail(prog_->name, ": the text to search is not valid UTF-8");
  out.clear();
  if (s.empty()) {
    out.push_back({0, 0, false});
    return;
  }
  std::u32string cps;
  std::vector<size_t> byte_at;  // byte offset of each code point, then s.size()
  cps.reserve(s.size());
  byte_at.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size();) {
    size_t len;
    byte_at.push_back(i);
    cps.push_back(uni::decode(s, i, &len));
    i += len;
  }
  byte_at.push_back(s.size());
  Matcher m(*prog_, cps);
  size_t prev = 0;     // end of the previous piece, in code points
  size_t search = 0;   // where the next search starts
  long last_end = -1;  // end of the previous match
  while (search <= cps.size()) {
    long found_b = -1, found_e = -1;
    for (size_t start = search; start <= cps.size(); ++start) {
      m.start_attempt();
      const long e = m.run(0, start);
      if (e >= 0) {
        found_b = static_cast<long>(start);
        found_e = e;
        break;
      }
    }
    if (found_b < 0) break;
    if (found_b == found_e && found_e == last_end) {  // no empty match right after a match
      ++search;
      continue;
    }
    const auto b = static_cast<size_t>(found_b), e = static_cast<size_t>(found_e);
    if (prev != b) out.push_back({byte_at[prev], byte_at[b], false});
    out.push_back({byte_at[b], byte_at[e], true});
    prev = e;
    last_end = found_e;
    search = e;
  }
  if (prev != cps.size()) out.push_back({byte_at[prev], s.size(), false});
}

}  // namespace strata::tok
