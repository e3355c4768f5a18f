// The tokenizer's regex engine (src/tokenizers/regex.cpp) where it once differed from Oniguruma,
// HF tokenizers' engine (found by tests/oracle/regex_oracle.cpp), and its limits against
// hostile patterns (found by fuzz/regex_match.cpp). Each expectation is Oniguruma 6.9.8's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util_fs.h"
#include "tokenizers/regex.h"

namespace strata::tok {
namespace {

// The matched pieces of find_matches, as strings.
std::vector<std::string> matches(const std::string& pattern, const std::string& text) {
  std::vector<Match> pieces;
  Regex(pattern, "test").find_matches(text, pieces);
  std::vector<std::string> out;
  for (const Match& m : pieces)
    if (m.is_match) out.push_back(text.substr(m.b, m.e - m.b));
  return out;
}

using V = std::vector<std::string>;

TEST(RegexCaseFolding, LongSFoldsWithS) {
  // Llama 3's contraction group: U+017F (long s) folds to s, so 'ſ is a contraction there.
  EXPECT_EQ(matches("(?i:'s|'t)", "'\u017Fa 'Sb 'tc"), (V{"'\u017F", "'S", "'t"}));
  // ...and the Kelvin sign U+212A to k: [a-z] under (?i) takes both, which lower-casing missed.
  EXPECT_EQ(matches("(?i)[a-z]+", "\u212Aelvin \u017Fun"), (V{"\u212Aelvin", "\u017Fun"}));
  EXPECT_EQ(matches("(?i)[\u017F]", "sS\u017F"), (V{"s", "S", "\u017F"}));
}

TEST(RegexCaseFolding, NegatedClassIsClosedBeforeNegation) {
  // [^a] under (?i) is "not a, not A".
  EXPECT_EQ(matches("(?i)[^a]", "aAb"), (V{"b"}));
  EXPECT_EQ(matches("(?i)[^\u03A3]", "\u03C3\u03C2\u03A3x"), (V{"x"}));
}

TEST(RegexCaseFolding, DottedCapitalIFoldsToItself) {
  // U+0130 has no simple case folding: lower-casing (to i) would wrongly join it with i.
  EXPECT_EQ(matches("(?i)i", "i\u0130I"), (V{"i", "I"}));
}

TEST(RegexCaseFolding, BareEscapesAreNotFolded) {
  // Oniguruma closes bracket classes over case folding, not bare property escapes.
  EXPECT_EQ(matches("(?i)\\p{Lu}", "aB"), (V{"B"}));
  EXPECT_EQ(matches("(?i)[\\p{Lu}]", "aB"), (V{"a", "B"}));
}

TEST(RegexWordCharacters, JoinersAreNotWordCharacters) {
  EXPECT_EQ(matches("\\w+", "zero\u200Cwidth\u200Djoiner"), (V{"zero", "width", "joiner"}));
}

TEST(RegexWordCharacters, LatinOneSuperscriptsOnlyOutsideBrackets) {
  // Oniguruma's bare \w takes U+00B2 (and U+00B3, U+00B9, U+00BC-U+00BE); its [\w] does not.
  EXPECT_EQ(matches("\\w+", "x\u00B2 \u00BD"), (V{"x\u00B2", "\u00BD"}));
  EXPECT_EQ(matches("[\\w]+", "x\u00B2"), (V{"x"}));
  EXPECT_EQ(matches("\\w+|[^\\w\\s]+", ",\u00B2v"), (V{",\u00B2", "v"}));
  EXPECT_EQ(matches("\\d\\b", "1\u00B2 2"), (V{"2"}));
}

TEST(RegexLimits, DeepNestingIsAnErrorNotAStackOverflow) {
  test::expect_error([] { Regex(std::string(100000, '('), "tokenizer.json: pre_tokenizer.pattern"); },
                     {"tokenizer.json: pre_tokenizer.pattern: regex", "nested more than 1000 deep"});
  test::expect_error([] { Regex("a" + std::string(5000, '?'), "p"); }, {"quantifiers in a row"});
}

TEST(RegexLimits, CountedRepeatsThatMultiplyAreRefusedBeforeCompiling) {
  test::expect_error([] { Regex("((a{1000}){1000}){1000}", "normalizer.pattern"); },
                     {"normalizer.pattern: regex '((a{1000}){1000}){1000}'", "too large once compiled"});
}

TEST(RegexLimits, ASlowSearchStopsWithAnErrorNamingThePattern) {
  // Each start position fails within the per-attempt limit (quadratic in the a's after it),
  // but 1500 of them add up to a cubic search of billions of steps: the search budget stops it.
  const std::string text(1500, 'a');
  test::expect_error([&] { matches("a*a*b", text); },
                     {"test: regex 'a*a*b': backtracking limit exceeded on a text of 1500 characters"});
}

TEST(RegexInput, InvalidUtf8IsAnErrorNotAnOverread) {
  // fuzz/regex_match found the overread: a text ending inside a multi-byte sequence.
  test::expect_error([] { matches("(?i)[\u017Fk]+|\\w", "Hello \xE2\x82"); },
                     {"test: regex '(?i)[\u017Fk]+|\\w': the text to search is not valid UTF-8"});
  test::expect_error([] { Regex("ab\xC3", "p"); }, {"p: regex 'ab\xC3': not valid UTF-8"});
}

}  // namespace
}  // namespace strata::tok
