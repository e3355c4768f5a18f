// Masked-LM corruption as HF's data collators do it, with labels holding the original id at
// chosen positions and -100 elsewhere. Special tokens (the encoder's special-token marks) are
// never chosen, and padding is added later, so never either.
//  - Token masking (DataCollatorForLanguageModeling): every token is chosen with probability
//    mlm_probability.
//  - Whole-word masking (DataCollatorForWholeWordMask): the words of the example are shuffled
//    and taken in that order, a word skipped when it would overshoot, until
//    min(512, max(1, round(n * mlm_probability))) tokens are chosen, n = the example's length
//    special tokens included and round = Python's round (half to even), exactly HF's count.
// A chosen token becomes the mask token (80%), a random vocabulary token (10%) or stays (10%).
// The draws are counter-based, a pure function of (seed, epoch, example, position): the same
// masks whatever the worker count, batch composition or resume point.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/text_encoder.h"

namespace strata::data {

struct MlmOptions {
  double probability = 0.15;
  uint64_t seed = 42;
  int32_t mask_id = 0;
  size_t vocab_size = 0;  // random replacements are drawn from [0, vocab_size), as HF does
  // Whole-word masking when non-empty: per vocabulary id, 1 when that token continues the word
  // of the token before it (word_continuation_table).
  std::vector<uint8_t> continues_word;
};

// Corrupts e in place; returns its labels. `example` is the dataset index of e.
std::vector<int32_t> mask_tokens(Encoded& e, const MlmOptions& opts, uint64_t epoch, uint64_t example);

// HF's whole-word masking groups a WordPiece token with the "##" tokens that follow it. For
// other tokenizers the word boundaries come from the spelling the vocabulary gives each token:
//  - WordPiece ("##" continuation prefix): "##x" continues a word;
//  - byte-level BPE (GPT-2, RoBERTa: "Ġ" marks a preceding space) and SentencePiece (Unigram
//    or BPE with Metaspace: "▁"): a token with the marker starts a word, any other continues
//    the word before it (so punctuation joins the word it touches: "hello," is one word);
//  - no marker: every token is a word of its own.
// The scheme is the marker most of the vocabulary starts with. A special token always ends
// the word before it, and the first token of an example always starts one. Throws when the
// encoder gives no token spellings.
std::vector<uint8_t> word_continuation_table(const TextEncoder& encoder);

}  // namespace strata::data
