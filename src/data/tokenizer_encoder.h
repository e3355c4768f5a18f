// The TextEncoder of a real tokenizer: HF's tokenizer(text, truncation=True,
// max_length=max_seq_length) as run_glue.py / run_mlm.py call it.
#pragma once
#include <initializer_list>

#include "data/text_encoder.h"
#include "tokenizers/tokenizer.h"

namespace strata::data {

// The id of the first of `names` the vocabulary has.
std::optional<int32_t> first_known_token(const tok::Tokenizer& tok, std::initializer_list<std::string_view> names);
// The tokenizer's padding id, else that of [PAD] or <pad>; an error when there is none.
int32_t pad_token_id(const tok::Tokenizer& tok);

class TokenizerEncoder final : public TextEncoder {
 public:
  // Sets tok's truncation to max_length tokens, longest-first (0 turns truncation off), so
  // tok is configured for this encoder: give each encoder its own Tokenizer. tok must outlive
  // it. The pad id is the tokenizer's padding id, else that of [PAD] or <pad>; a tokenizer
  // with none is an error unless !pad_token_required (causal LM, whose padding is outside the
  // attention mask and labelled -100, so any id serves: then <|endoftext|>, </s>, or 0, as
  // HF scripts set pad_token = eos_token).
  TokenizerEncoder(tok::Tokenizer& tok, size_t max_length, bool pad_token_required = true);

  Encoded encode(std::string_view text) const override;
  Encoded encode(std::string_view text, std::string_view pair) const override;
  size_t max_length() const override { return max_length_; }
  int32_t pad_id() const override { return pad_id_; }
  size_t vocab_size() const override { return vocab_size_; }
  std::optional<int32_t> mask_id() const override { return mask_id_; }
  std::optional<std::string> id_to_token(int32_t id) const override { return tok_.id_to_token(id); }

 private:
  const tok::Tokenizer& tok_;
  size_t max_length_;
  int32_t pad_id_;
  size_t vocab_size_;
  std::optional<int32_t> mask_id_;
};

}  // namespace strata::data
