// What the tokenizer targets do with a tokenizer that loaded: encode a fixed text and a pair
// (added tokens, normalizer, pre-tokenizer, model, post-processor, truncation and padding as
// the file configured them) and decode the ids back.
#pragma once
#include "tokenizers/tokenizer.h"

namespace strata::fuzz {

void exercise_tokenizer(const tok::Tokenizer& t);

}  // namespace strata::fuzz
