// The Porter stemmer as nltk's PorterStemmer stems in its default mode, NLTK_EXTENSIONS (nltk
// 3.10): Porter's 1980 algorithm with the changes Martin Porter published later and NLTK's own
// (a pool of irregular forms: sky, skies, dying, lying, tying, news, innings, outings,
// cannings, howe, proceed, exceed, succeed; "ies" / "ied" on four-letter words; "alli" before
// the other step-2 rules; "fulli", "logi"; a y -> i that needs a consonant before the y). It is
// the stemmer of rouge_score's use_stemmer=True (train/rouge.h).
#pragma once
#include <string>
#include <string_view>

namespace strata {

// PorterStemmer().stem(word): the word lowercased as Python's str.lower() does, then stemmed
// code point by code point (any UTF-8 input gives nltk's answer; rouge_score only passes ASCII
// [a-z0-9] tokens longer than three characters).
std::string porter_stem(std::string_view word);

}  // namespace strata
