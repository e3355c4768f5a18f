// Python str semantics on UTF-8 text, where HF's scripts depend on them: run_qa strips
// questions with str.lstrip(), the SQuAD metrics normalise answers with str.lower(),
// str.split() and re's Unicode \w; ROUGE lowercases with str.lower(), sacreBLEU strips with
// str.rstrip() and splits with str.split(). Character properties come from utf8proc (Unicode
// 15.0; Python 3.11 has 14.0, which differs only for characters added since).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace strata::data::py {

bool isspace(char32_t c);  // str.isspace(): bidi class WS, B or S, or category Zs
bool isalnum(char32_t c);  // str.isalnum(), hence re's \w without '_': categories L* and N*

std::string lstrip(std::string_view s);              // str.lstrip()
std::string rstrip(std::string_view s);              // str.rstrip()
std::vector<std::string> split(std::string_view s);  // str.split(): runs of isspace separate
// str.lower(): full lowercase mappings (U+0130 -> "i\u0307") and the Final_Sigma rule for
// U+03A3, with Cased / Case_Ignorable taken from general categories (Lu Ll Lt / Mn Me Cf Lm Sk
// and the apostrophes, periods and colons of Word_Break MidLetter, MidNumLet, Single_Quote).
std::string lower(std::string_view s);

// Code points of valid UTF-8, and back.
std::u32string decode(std::string_view s);
std::string encode(std::u32string_view s);

}  // namespace strata::data::py
