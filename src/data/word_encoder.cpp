#include "data/word_encoder.h"

#include "data/tokenizer_encoder.h"
#include "util/error.h"

namespace strata::data {

WordEncoder::WordEncoder(tok::Tokenizer& tok, size_t max_length, bool add_prefix_space)
    : tok_(tok), max_length_(max_length), add_prefix_space_(add_prefix_space), pad_id_(pad_token_id(tok)) {
  tok.set_truncation(std::nullopt);
  specials_ = special_layout(tok, /*pair=*/false);
  if (max_length != 0 && max_length <= specials_.size())
    fail("max_seq_length ", max_length, " leaves no room beside the ", specials_.size(), " special tokens");
}

WordEncoding WordEncoder::encode(std::span<const std::string> words) const {
  std::vector<int32_t> ids, word_of;
  for (size_t w = 0; w < words.size(); ++w) {
    const std::string& word = words[w];
    // HF's prepend is a no-op on an empty string: an empty word stays empty (no lone "Ġ").
    const bool prefix = add_prefix_space_ && !word.empty() && !word.starts_with(' ');
    const tok::Encoding e = tok_.encode(prefix ? " " + word : word, /*add_special_tokens=*/false);
    for (size_t i = 0; i < e.ids.size(); ++i) {
      if (!e.attention_mask.empty() && e.attention_mask[i] == 0) continue;  // padding
      ids.push_back(e.ids[i]);
      word_of.push_back(static_cast<int32_t>(w));
    }
  }
  if (max_length_ != 0 && ids.size() > max_length_ - specials_.size()) {
    ids.resize(max_length_ - specials_.size());
    word_of.resize(ids.size());
  }
  WordEncoding out;
  append_special(out.enc, specials_.before);
  out.enc.ids.insert(out.enc.ids.end(), ids.begin(), ids.end());
  out.enc.type_ids.insert(out.enc.type_ids.end(), ids.size(), specials_.first_type);
  out.enc.special_mask.insert(out.enc.special_mask.end(), ids.size(), 0);
  append_special(out.enc, specials_.after);
  out.word_ids.assign(specials_.before.ids.size(), -1);
  out.word_ids.insert(out.word_ids.end(), word_of.begin(), word_of.end());
  out.word_ids.insert(out.word_ids.end(), specials_.after.ids.size(), -1);
  return out;
}

}  // namespace strata::data
