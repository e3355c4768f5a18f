#include "data/special_layout.h"

#include "util/error.h"

namespace strata::data {

namespace {

bool padding_at(const tok::Encoding& e, size_t i) { return !e.attention_mask.empty() && e.attention_mask[i] == 0; }

size_t unpadded_size(const tok::Encoding& e) {
  size_t n = 0;
  for (size_t i = 0; i < e.ids.size(); ++i) n += padding_at(e, i) ? 0 : 1;
  return n;
}

}  // namespace

void append_special(Encoded& e, const Encoded& run) {
  e.ids.insert(e.ids.end(), run.ids.begin(), run.ids.end());
  e.type_ids.insert(e.type_ids.end(), run.type_ids.begin(), run.type_ids.end());
  e.special_mask.insert(e.special_mask.end(), run.special_mask.begin(), run.special_mask.end());
}

SpecialLayout special_layout(const tok::Tokenizer& tok, bool pair) {
  const tok::Encoding full = pair ? tok.encode_pair("a", "b") : tok.encode("a");
  const size_t n_a = unpadded_size(tok.encode("a", /*add_special_tokens=*/false));
  const size_t n_b = pair ? unpadded_size(tok.encode("b", /*add_special_tokens=*/false)) : 0;
  SpecialLayout out;
  Encoded* runs[3] = {&out.before, &out.between, &out.after};
  int32_t* types[2] = {&out.first_type, &out.second_type};
  const size_t n_seq = pair ? 2 : 1, lengths[2] = {n_a, n_b};
  size_t i = 0;
  bool ok = n_a > 0 && (!pair || n_b > 0);
  for (size_t s = 0; s <= n_seq && ok; ++s) {
    // The run of special tokens before sequence s (or after the last one).
    for (; i < full.ids.size() && (padding_at(full, i) || full.special_tokens_mask[i]); ++i) {
      if (padding_at(full, i)) continue;
      runs[s == n_seq ? 2 : s]->ids.push_back(full.ids[i]);
      runs[s == n_seq ? 2 : s]->type_ids.push_back(full.type_ids[i]);
      runs[s == n_seq ? 2 : s]->special_mask.push_back(1);
    }
    if (s == n_seq) break;
    *types[s] = i < full.ids.size() ? full.type_ids[i] : 0;
    for (size_t k = 0; k < lengths[s]; ++k, ++i)
      ok = ok && i < full.ids.size() && !padding_at(full, i) && !full.special_tokens_mask[i];
  }
  if (!ok || i != full.ids.size())
    fail("tokenizer: cannot tell where the post-processor puts its special tokens (the encoding of ",
         pair ? "the pair ('a', 'b')" : "'a'", " is not special tokens around the words' own tokens)");
  return out;
}

}  // namespace strata::data
