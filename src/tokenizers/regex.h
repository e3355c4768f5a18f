// A small backtracking regex engine for the `Regex` patterns of Split / Replace components.
// HF compiles those with Oniguruma (Ruby syntax), so this follows its semantics: leftmost-first
// alternation, greedy / lazy / possessive quantifiers, Unicode classes over code points.
// std::regex cannot do \p{L} & co. on UTF-8, hence this.
//
// Supported: literals and escapes (\t \n \r \f \v \a \e \0 \xHH \x{H..} \uHHHH), . ^ $ \A \z \Z
// \b \B, classes [...] with ranges and negation, \s \S \d \D \w \W \h \H, \p{..} / \P{..} / \p{^..}
// for the general categories (L, Lu, ..., N, Nd, ..., Cn) and their long names, groups (..)
// (?:..) (?<name>..) (?>..), lookahead (?=..) (?!..), flags (?i) (?-i) (?i:..), alternation,
// * + ? {n} {n,} {n,m} {,m} and their lazy (?) and possessive (+) forms. Anything else (scripts
// like \p{Han}, lookbehind, backreferences) is rejected with a strata::Error naming the pattern.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizers/normalized_string.h"

namespace strata::tok {

class Regex {
 public:
  // Throws strata::Error("<where>: regex '<pattern>': <problem>").
  Regex(std::string_view pattern, const std::string& where);
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  ~Regex();

  // `s` must be valid UTF-8 (else strata::Error). The matches of Oniguruma's find_iter (an empty match right after the previous match is
  // skipped) and the text between them, covering `s` (HF's Pattern::find_matches).
  void find_matches(std::string_view s, std::vector<Match>& out) const;

  struct Program;

 private:
  std::unique_ptr<Program> prog_;
};

}  // namespace strata::tok
