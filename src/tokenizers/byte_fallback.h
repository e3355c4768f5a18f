// SentencePiece's byte fallback, shared by the BPE and Unigram models (encoding) and the
// ByteFallback decoder: byte b is spelled as the token "<0xBB>", two upper-case hex digits.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "tokenizers/models.h"

namespace strata::tok::byte_fallback {

std::string token_name(unsigned char b);  // "<0x0A>"
// The byte a "<0xNN>" token stands for (either case of hex digit), or -1 for any other token.
int token_byte(std::string_view token);

// The ids of the 256 byte tokens in a vocabulary; a vocabulary may lack some.
class ByteIds {
 public:
  ByteIds() { ids_.fill(-1); }
  explicit ByteIds(const Vocab& vocab);
  int32_t operator[](unsigned char b) const { return ids_[b]; }
  // Whether every byte of s has a token, so s can be spelled in bytes.
  bool covers(std::string_view s) const;

 private:
  std::array<int32_t, 256> ids_;
};

}  // namespace strata::tok::byte_fallback
