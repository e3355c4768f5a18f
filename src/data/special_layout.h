// Where a tokenizer's post-processor puts its special tokens around one sequence or a pair:
// [CLS] A [SEP] B [SEP] for BERT, <s> A </s></s> B </s> for RoBERTa, nothing for GPT-2.
// Data code that assembles encodings itself (pre-split words, question answering windows)
// adds them through this. The post-processor is not reachable through tok::Tokenizer's
// interface, so the layout is read from encodings of probe words: the special-tokens-mask
// runs before, between and after the words' own tokens. Every HF post-processor (BERT,
// RoBERTa, template, byte-level) puts fixed runs there.
#pragma once
#include <cstdint>

#include "data/text_encoder.h"
#include "tokenizers/tokenizer.h"

namespace strata::data {

struct SpecialLayout {
  Encoded before, between, after;  // between: pairs only
  int32_t first_type = 0, second_type = 0;  // the type ids of the sequences' own tokens
  size_t size() const { return before.ids.size() + between.ids.size() + after.ids.size(); }
};

// Throws strata::Error when the probe encodings do not have that shape.
SpecialLayout special_layout(const tok::Tokenizer& tok, bool pair);

// Appends a run of special tokens (ids, type ids, special mask) to e.
void append_special(Encoded& e, const Encoded& run);

}  // namespace strata::data
