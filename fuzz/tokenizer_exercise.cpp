#include "tokenizer_exercise.h"

#include <vector>

namespace strata::fuzz {

void exercise_tokenizer(const tok::Tokenizer& t) {
  // ASCII, punctuation, digits, accents (normalizers), CJK, an emoji (byte fallback) and
  // whitespace runs: a little of everything a pre-tokenizer splits on.
  static const char kText[] = "Hello, world! It's 2024: café naïve 東京 \xF0\x9F\x98\x80  tabs\tand\nlines.";
  tok::Encoding e = t.encode(kText);
  if (e.ids.size() != e.offsets.size() || e.ids.size() != e.attention_mask.size()) __builtin_trap();
  t.decode(e.ids);
  tok::Encoding p = t.encode_pair("Is this a question?", kText);
  std::vector<tok::Encoding> batch{std::move(e), std::move(p)};
  t.pad_batch(batch);
  for (int32_t id : batch[1].ids) t.id_to_token(id);
}

}  // namespace strata::fuzz
