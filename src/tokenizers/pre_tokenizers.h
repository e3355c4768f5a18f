// Pre-tokenizers: cut the normalized input into the pieces ("words") the model tokenizes.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizers/pre_tokenized.h"

namespace strata::tok {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void pre_tokenize(PreTokenized& pt) const = 0;
};

std::unique_ptr<PreTokenizer> make_bert_pre_tokenizer();
std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex);

// The "pre_tokenizer" object of tokenizer.json (null gives nullptr); `where` names it in errors.
std::unique_ptr<PreTokenizer> pre_tokenizer_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace strata::tok
