// Post-processors: add the special tokens around the encoded sequence(s) and set type ids.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tokenizers/tokenizer.h"

namespace strata::tok {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual size_t added_tokens(bool pair) const = 0;
  // HF's process_encodings: one encoding per input sequence in, any number out (merged after).
  virtual void process(std::vector<Encoding>& encodings, bool add_special_tokens) const = 0;
};

// TemplateProcessing "CLS:0 $A:0 SEP:0" / "CLS:0 $A:0 SEP:0 $B:1 SEP:1" for the given tokens.
std::unique_ptr<PostProcessor> make_bert_template(std::pair<std::string, int32_t> cls,
                                                  std::pair<std::string, int32_t> sep);
std::unique_ptr<PostProcessor> make_roberta_processing(std::pair<std::string, int32_t> cls,
                                                       std::pair<std::string, int32_t> sep, bool trim_offsets,
                                                       bool add_prefix_space);
std::unique_ptr<PostProcessor> make_byte_level_processing(bool trim_offsets, bool add_prefix_space);

// The "post_processor" object of tokenizer.json (null gives nullptr).
std::unique_ptr<PostProcessor> post_processor_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace strata::tok
