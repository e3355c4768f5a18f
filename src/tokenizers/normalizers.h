// Normalizers: rewrite a NormalizedString in place, keeping its alignments.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizers/normalized_string.h"

namespace strata::tok {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(NormalizedString& s) const = 0;
};

// BertNormalizer as transformers' BertTokenizer configures it (strip_accents null follows lowercase).
std::unique_ptr<Normalizer> make_bert_normalizer(bool clean_text, bool handle_chinese_chars, bool strip_accents,
                                                 bool lowercase);

// The "normalizer" object of tokenizer.json (null gives nullptr); `where` names it in errors.
std::unique_ptr<Normalizer> normalizer_from_json(const nlohmann::json& j, const std::string& where);

// Precompiled: sentencepiece's compiled normalization rules (precompiled.cpp).
std::unique_ptr<Normalizer> make_precompiled(const std::string& charsmap_base64, const std::string& where);

}  // namespace strata::tok
