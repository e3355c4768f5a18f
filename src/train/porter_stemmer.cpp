#include "train/porter_stemmer.h"

#include <algorithm>
#include <span>
#include <unordered_map>
#include <vector>

#include "data/py_text.h"

// Each step mirrors the method of nltk/stem/porter.py with the same name, in NLTK_EXTENSIONS
// mode; "stem" is nltk's name for the word with a suffix removed.
namespace strata {

namespace {

using Word = std::u32string;
using WordView = std::u32string_view;

bool is_vowel(char32_t c) { return c == U'a' || c == U'e' || c == U'i' || c == U'o' || c == U'u'; }

// _is_consonant: a 'y' is a consonant at the start of the word or after a vowel (a run of y's
// alternates).
bool is_consonant(WordView w, size_t i) {
  if (is_vowel(w[i])) return false;
  if (w[i] != U'y') return true;
  bool negate = false;
  while (i > 0 && w[i] == U'y') {
    negate = !negate;
    --i;
  }
  return !is_vowel(w[i]) != negate;
}

// _consonant_flags: is_consonant of every position in one pass.
std::vector<bool> consonant_flags(WordView w) {
  std::vector<bool> flags(w.size());
  for (size_t i = 0; i < w.size(); ++i) flags[i] = w[i] == U'y' ? i == 0 || !flags[i - 1] : !is_vowel(w[i]);
  return flags;
}

// _measure: m in [C](VC){m}[V], i.e. the number of vowel -> consonant transitions.
size_t measure(WordView stem) {
  const std::vector<bool> consonant = consonant_flags(stem);
  size_t m = 0;
  for (size_t i = 1; i < consonant.size(); ++i) m += !consonant[i - 1] && consonant[i];
  return m;
}

bool contains_vowel(WordView stem) {
  const std::vector<bool> consonant = consonant_flags(stem);
  return std::find(consonant.begin(), consonant.end(), false) != consonant.end();
}

Word cut(WordView w, size_t n) { return Word(w.substr(0, w.size() - n)); }

// *d: ends with a double consonant.
bool ends_double_consonant(WordView w) {
  const size_t n = w.size();
  return n >= 2 && w[n - 1] == w[n - 2] && is_consonant(w, n - 1);
}

// *o: ends consonant-vowel-consonant, the last not w, x or y; NLTK adds a two-letter
// vowel-consonant word.
bool ends_cvc(WordView w) {
  const size_t n = w.size();
  if (n >= 3 && is_consonant(w, n - 3) && !is_consonant(w, n - 2) && is_consonant(w, n - 1) && w[n - 1] != U'w' &&
      w[n - 1] != U'x' && w[n - 1] != U'y')
    return true;
  return n == 2 && !is_consonant(w, 0) && is_consonant(w, 1);
}

// A rule's condition sees the whole word and its stem (the word without the suffix).
using Condition = bool (*)(WordView word, WordView stem);

struct Rule {
  WordView suffix, replacement;
  Condition condition;  // nullptr: unconditional
};

bool m_gt_0(WordView, WordView stem) { return measure(stem) > 0; }
bool m_gt_1(WordView, WordView stem) { return measure(stem) > 1; }

// _apply_rule_list: the first rule whose suffix ends the word decides; when its condition
// fails, the word stays as it is (no later rule is tried).
Word apply_rules(WordView word, std::span<const Rule> rules) {
  for (const Rule& r : rules) {
    if (!word.ends_with(r.suffix)) continue;
    const WordView stem = word.substr(0, word.size() - r.suffix.size());
    if (r.condition == nullptr || r.condition(word, stem)) return Word(stem) + Word(r.replacement);
    return Word(word);
  }
  return Word(word);
}

Word step1a(WordView w) {
  if (w.ends_with(U"ies") && w.size() == 4) return cut(w, 3) + U"ie";  // dies -> die, not di
  static constexpr Rule rules[] = {
      {U"sses", U"ss", nullptr}, {U"ies", U"i", nullptr}, {U"ss", U"ss", nullptr}, {U"s", U"", nullptr}};
  return apply_rules(w, rules);
}

// The rules after a removed -ed / -ing, on the shortened word.
Word step1b_after(WordView w) {
  static constexpr Rule restore_e[] = {{U"at", U"ate", nullptr}, {U"bl", U"ble", nullptr}, {U"iz", U"ize", nullptr}};
  for (const Rule& r : restore_e)
    if (w.ends_with(r.suffix)) return cut(w, r.suffix.size()) + Word(r.replacement);
  const bool keeps_double = w.back() == U'l' || w.back() == U's' || w.back() == U'z';
  // (*d and not (*L or *S or *Z)) -> single letter
  if (ends_double_consonant(w)) return keeps_double ? Word(w) : cut(w, 1);
  // nltk writes that rule's suffix as the marker "*d" and also tests it as a literal suffix;
  // the replacement is the last letter, so a word ending "*d" loses its '*'.
  if (w.ends_with(U"*d")) return keeps_double ? Word(w) : cut(w, 2) + w.back();
  // (m=1 and *o) -> E
  return measure(w) == 1 && ends_cvc(w) ? Word(w) + U"e" : Word(w);
}

Word step1b(WordView w) {
  if (w.ends_with(U"ied")) return cut(w, 3) + (w.size() == 4 ? U"ie" : U"i");  // died -> die, spied -> spi
  if (w.ends_with(U"eed")) {
    const WordView stem = w.substr(0, w.size() - 3);
    return measure(stem) > 0 ? Word(stem) + U"ee" : Word(w);
  }
  for (const WordView suffix : {WordView(U"ed"), WordView(U"ing")}) {
    if (!w.ends_with(suffix)) continue;
    const WordView stem = w.substr(0, w.size() - suffix.size());
    if (contains_vowel(stem)) return step1b_after(stem);
  }
  return Word(w);
}

// (*c and not c) Y -> I: happy -> happi, enjoy and by stay.
Word step1c(WordView w) {
  static constexpr Rule rules[] = {
      {U"y", U"i", [](WordView, WordView stem) { return stem.size() > 1 && is_consonant(stem, stem.size() - 1); }}};
  return apply_rules(w, rules);
}

Word step2(WordView w) {
  // NLTK applies ALLI -> AL first and runs step 2 again on the result.
  if (w.ends_with(U"alli") && measure(w.substr(0, w.size() - 4)) > 0) return step2(cut(w, 4) + U"al");
  static constexpr Rule rules[] = {
      {U"ational", U"ate", m_gt_0},
      {U"tional", U"tion", m_gt_0},
      {U"enci", U"ence", m_gt_0},
      {U"anci", U"ance", m_gt_0},
      {U"izer", U"ize", m_gt_0},
      {U"bli", U"ble", m_gt_0},
      {U"alli", U"al", m_gt_0},
      {U"entli", U"ent", m_gt_0},
      {U"eli", U"e", m_gt_0},
      {U"ousli", U"ous", m_gt_0},
      {U"ization", U"ize", m_gt_0},
      {U"ation", U"ate", m_gt_0},
      {U"ator", U"ate", m_gt_0},
      {U"alism", U"al", m_gt_0},
      {U"iveness", U"ive", m_gt_0},
      {U"fulness", U"ful", m_gt_0},
      {U"ousness", U"ous", m_gt_0},
      {U"aliti", U"al", m_gt_0},
      {U"iviti", U"ive", m_gt_0},
      {U"biliti", U"ble", m_gt_0},
      {U"fulli", U"ful", m_gt_0},
      // The 'l' of logi stays with the stem for the measure, so geo-logi works like archaeo-logi.
      {U"logi", U"log", [](WordView word, WordView) { return measure(word.substr(0, word.size() - 3)) > 0; }},
  };
  return apply_rules(w, rules);
}

Word step3(WordView w) {
  static constexpr Rule rules[] = {
      {U"icate", U"ic", m_gt_0}, {U"ative", U"", m_gt_0}, {U"alize", U"al", m_gt_0}, {U"iciti", U"ic", m_gt_0},
      {U"ical", U"ic", m_gt_0},  {U"ful", U"", m_gt_0},   {U"ness", U"", m_gt_0},
  };
  return apply_rules(w, rules);
}

Word step4(WordView w) {
  static constexpr Rule rules[] = {
      {U"al", U"", m_gt_1},
      {U"ance", U"", m_gt_1},
      {U"ence", U"", m_gt_1},
      {U"er", U"", m_gt_1},
      {U"ic", U"", m_gt_1},
      {U"able", U"", m_gt_1},
      {U"ible", U"", m_gt_1},
      {U"ant", U"", m_gt_1},
      {U"ement", U"", m_gt_1},
      {U"ment", U"", m_gt_1},
      {U"ent", U"", m_gt_1},
      {U"ion", U"",
       [](WordView, WordView stem) { return measure(stem) > 1 && (stem.back() == U's' || stem.back() == U't'); }},
      {U"ou", U"", m_gt_1},
      {U"ism", U"", m_gt_1},
      {U"ate", U"", m_gt_1},
      {U"iti", U"", m_gt_1},
      {U"ous", U"", m_gt_1},
      {U"ive", U"", m_gt_1},
      {U"ize", U"", m_gt_1},
  };
  return apply_rules(w, rules);
}

// (m>1) E -> ; (m=1 and not *o) E -> . Both conditions are tried, unlike a rule list.
Word step5a(WordView w) {
  if (w.ends_with(U"e")) {
    const WordView stem = w.substr(0, w.size() - 1);
    const size_t m = measure(stem);
    if (m > 1 || (m == 1 && !ends_cvc(stem))) return Word(stem);
  }
  return Word(w);
}

// (m>1 and *d and *L) -> single letter, the measure taken with one 'l' left.
Word step5b(WordView w) {
  static constexpr Rule rules[] = {
      {U"ll", U"l", [](WordView word, WordView) { return measure(word.substr(0, word.size() - 1)) > 1; }}};
  return apply_rules(w, rules);
}

const std::unordered_map<Word, Word>& irregular_forms() {
  static const std::unordered_map<Word, Word> pool = {
      {U"sky", U"sky"},        {U"skies", U"sky"},       {U"dying", U"die"},        {U"lying", U"lie"},
      {U"tying", U"tie"},      {U"news", U"news"},       {U"innings", U"inning"},   {U"inning", U"inning"},
      {U"outings", U"outing"}, {U"outing", U"outing"},   {U"cannings", U"canning"}, {U"canning", U"canning"},
      {U"howe", U"howe"},      {U"proceed", U"proceed"}, {U"exceed", U"exceed"},    {U"succeed", U"succeed"},
  };
  return pool;
}

}  // namespace

std::string porter_stem(std::string_view word) {
  Word w = data::py::decode(data::py::lower(word));
  if (const auto it = irregular_forms().find(w); it != irregular_forms().end()) return data::py::encode(it->second);
  // Words of one or two characters (before lowercasing) are only lowercased.
  if (data::py::decode(word).size() <= 2) return data::py::encode(w);
  w = step1a(w);
  w = step1b(w);
  w = step1c(w);
  w = step2(w);
  w = step3(w);
  w = step4(w);
  w = step5a(w);
  w = step5b(w);
  return data::py::encode(w);
}

}  // namespace strata
