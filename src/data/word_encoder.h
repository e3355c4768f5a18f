// Pre-split words through a tokenizer, as HF's tokenizer(words, is_split_into_words=True,
// truncation=True, max_length=...) does for run_ner.py: each word is normalized,
// pre-tokenized and tokenized on its own, the pieces are joined, truncated to max_length
// less the special tokens, and the post-processor's special tokens go around them. word_ids
// says which word each token came from (HF's word_ids(), with -1 for its None).
//
// The post-processor is not reachable through tok::Tokenizer's interface, so its special
// tokens for a single sequence are read once from an encoding of a probe word: the
// special-tokens-mask run before the word's tokens and the one after. Every HF post-processor
// (BERT, RoBERTa, template, byte-level) puts a fixed prefix and suffix around one sequence.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/special_layout.h"
#include "data/text_encoder.h"
#include "tokenizers/tokenizer.h"

namespace strata::data {

struct WordEncoding {
  Encoded enc;
  std::vector<int32_t> word_ids;  // per token: the word's index, -1 for special tokens
};

class WordEncoder {
 public:
  // Turns tok's truncation off (words are encoded whole; truncation applies to the joined
  // tokens), so give it a Tokenizer of its own; tok must outlive it. max_length 0: no
  // truncation. add_prefix_space puts a space before every non-empty word that has none,
  // which is what run_ner's add_prefix_space=True (for bloom, gpt2, roberta, deberta) makes a
  // byte-level pre-tokenizer do; it changes nothing for tokenizers that split on whitespace.
  WordEncoder(tok::Tokenizer& tok, size_t max_length, bool add_prefix_space);

  WordEncoding encode(std::span<const std::string> words) const;  // thread-safe
  int32_t pad_id() const { return pad_id_; }
  size_t max_length() const { return max_length_; }

 private:
  const tok::Tokenizer& tok_;
  size_t max_length_;
  bool add_prefix_space_;
  SpecialLayout specials_;
  int32_t pad_id_;
};

}  // namespace strata::data
