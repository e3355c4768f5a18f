#include "tokenizers/byte_fallback.h"

#include <cstdio>

namespace strata::tok::byte_fallback {

std::string token_name(unsigned char b) {
  char name[8];
  std::snprintf(name, sizeof name, "<0x%02X>", b);
  return name;
}

int token_byte(std::string_view t) {
  if (t.size() != 6 || !t.starts_with("<0x") || t[5] != '>') return -1;
  auto v = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  return v(t[3]) < 0 || v(t[4]) < 0 ? -1 : v(t[3]) * 16 + v(t[4]);
}

ByteIds::ByteIds(const Vocab& vocab) : ByteIds() {
  for (int b = 0; b < 256; ++b)
    if (auto it = vocab.find(token_name(static_cast<unsigned char>(b))); it != vocab.end()) ids_[b] = it->second;
}

bool ByteIds::covers(std::string_view s) const {
  for (unsigned char b : s)
    if (ids_[b] < 0) return false;
  return true;
}

}  // namespace strata::tok::byte_fallback
