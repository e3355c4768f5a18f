// The tokenizer's regex engine: a pattern of arbitrary bytes compiled, then run over a text.
// The input is "PATTERN\0TEXT" (no NUL: the whole input is the pattern, matched against
// itself), the format tests/regex_oracle reads too. find_matches must cover the text with
// pieces in order, each ending where the next begins.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "tokenizers/regex.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view pattern = input.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos ? input : input.substr(nul + 1);
  try {
    const strata::tok::Regex re(pattern, "fuzz");
    std::vector<strata::tok::Match> pieces;
    re.find_matches(text, pieces);
    size_t at = 0;
    for (const strata::tok::Match& m : pieces) {
      if (m.b != at || m.e < m.b || m.e > text.size()) __builtin_trap();
      at = m.e;
    }
    if (at != text.size()) __builtin_trap();
  } catch (const strata::Error&) {
  }
  return 0;
}
