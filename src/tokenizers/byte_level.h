// GPT-2's byte-level scheme, shared by the ByteLevel pre-tokenizer, decoder and post-processor:
// every byte maps to a printable character (bytes_to_unicode in openai/gpt-2's encoder.py),
// text is split with GPT-2's regex, and offsets can be trimmed of the spaces tokens carry.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizers/normalized_string.h"
#include "tokenizers/tokenizer.h"

namespace strata::tok::byte_level {

char32_t byte_to_char(unsigned char b);
// The byte a byte-level character stands for, or -1 for any other character.
int char_to_byte(char32_t c);

// GPT-2's pre-tokenization regex, written out by hand:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
void find_gpt2_matches(std::string_view s, std::vector<Match>& out);

// HF's process_offsets: shrinks each token's offsets by the spaces (Ġ or Unicode whitespace)
// it starts or ends with, except the one space add_prefix_space put before the first token.
void trim_offsets(Encoding& e, bool add_prefix_space);

}  // namespace strata::tok::byte_level
