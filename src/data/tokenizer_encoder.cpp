#include "data/tokenizer_encoder.h"

#include "util/error.h"

namespace strata::data {

namespace {

// A tokenizer with padding configured pads even single encodings (HF pads in encode());
// the collator pads per batch, so positions outside the attention mask are dropped here.
Encoded unpadded(const tok::Encoding& e) {
  Encoded out;
  const size_t n = e.ids.size();
  out.ids.reserve(n);
  out.type_ids.reserve(n);
  out.special_mask.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!e.attention_mask.empty() && e.attention_mask[i] == 0) continue;
    out.ids.push_back(e.ids[i]);
    out.type_ids.push_back(i < e.type_ids.size() ? e.type_ids[i] : 0);
    out.special_mask.push_back(i < e.special_tokens_mask.size() ? static_cast<uint8_t>(e.special_tokens_mask[i]) : 0);
  }
  return out;
}

}  // namespace

std::optional<int32_t> first_known_token(const tok::Tokenizer& tok, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names)
    if (auto id = tok.token_to_id(n)) return id;
  return std::nullopt;
}

int32_t pad_token_id(const tok::Tokenizer& tok) {
  if (tok.padding()) return tok.padding()->pad_id;
  const auto pad = first_known_token(tok, {"[PAD]", "<pad>"});
  if (!pad) fail("tokenizer: no padding token (padding is not configured and the vocabulary has neither [PAD] nor <pad>)");
  return *pad;
}

TokenizerEncoder::TokenizerEncoder(tok::Tokenizer& tok, size_t max_length, bool pad_token_required)
    : tok_(tok), max_length_(max_length), vocab_size_(tok.vocab_size()) {
  if (max_length == 0) {
    tok.set_truncation(std::nullopt);
  } else {
    tok::TruncationParams t;
    t.max_length = max_length;
    t.strategy = tok::TruncationStrategy::LongestFirst;
    tok.set_truncation(t);
  }
  if (tok.padding()) {
    pad_id_ = tok.padding()->pad_id;
  } else {
    const auto pad = first_known_token(tok, {"[PAD]", "<pad>"});
    if (!pad && pad_token_required)
      fail("tokenizer: no padding token (padding is not configured and the vocabulary has neither [PAD] nor <pad>)");
    pad_id_ = pad ? *pad : first_known_token(tok, {"<|endoftext|>", "</s>"}).value_or(0);
  }
  mask_id_ = first_known_token(tok, {"[MASK]", "<mask>"});
}

Encoded TokenizerEncoder::encode(std::string_view text) const { return unpadded(tok_.encode(text)); }

Encoded TokenizerEncoder::encode(std::string_view text, std::string_view pair) const {
  return unpadded(tok_.encode_pair(text, pair));
}

}  // namespace strata::data
