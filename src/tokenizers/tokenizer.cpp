// The encode / decode pipeline, in HF's order: added tokens are split out (raw, then after
// normalization), the pre-tokenizer cuts the rest, the model tokenizes each piece (all of them,
// truncation or not: HF 0.23.0-0.23.2 stopped early under truncation, which cut overflowing
// windows short, and 0.23.3 went back to the whole text), offsets go back to the original text,
// then truncation, the post-processor and padding.
#include <filesystem>

#include "tokenizers/encoding_ops.h"
#include "tokenizers/tokenizer_impl.h"
#include "util/error.h"

namespace strata::tok {

namespace {

// Byte offsets into `text` -> code-point offsets, exactly as HF's BytesToCharOffsetConverter
// (an end inside a character maps to that character's index; a start past the end keeps the
// byte offsets).
class CharOffsets {
 public:
  explicit CharOffsets(std::string_view text) : char_at_(text.size()) {
    uint32_t c = 0;
    for (size_t i = 0; i < text.size(); ++c) {
      const size_t len = uni::seq_len(static_cast<unsigned char>(text[i]));
      for (size_t k = 0; k < len && i + k < text.size(); ++k) char_at_[i + k] = c;
      i += len;
    }
  }
  std::pair<size_t, size_t> convert(size_t b, size_t e) const {
    const size_t n = char_at_.size();
    if (b >= n) return {b, e};
    if (e < n) return {char_at_[b], char_at_[e]};
    const size_t last = e >= 1 && e - 1 < n ? char_at_[e - 1] : char_at_[b] + 1;
    return {char_at_[b], last + 1};
  }

 private:
  std::vector<uint32_t> char_at_;
};

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_tokenizer_json(const std::string& path) { return Tokenizer(load_tokenizer_json(path)); }

Tokenizer Tokenizer::from_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) fail(dir, ": not a directory (expected a tokenizer directory)");
  if (fs::exists(dir + "/tokenizer.json")) return from_tokenizer_json(dir + "/tokenizer.json");
  if (fs::exists(dir + "/vocab.txt")) return Tokenizer(load_bert_vocab_txt(dir));
  if (fs::exists(dir + "/vocab.json") && fs::exists(dir + "/merges.txt")) return Tokenizer(load_vocab_json_merges(dir));
  fail(dir, ": no tokenizer.json, vocab.txt or vocab.json + merges.txt in this directory");
}

namespace {

// One input sequence through added-token extraction, normalization, pre-tokenization and the
// model, with offsets in code points of the (UTF-8-repaired) text.
Encoding encode_sequence(const Tokenizer::Impl& t, std::string_view input, int32_t type_id) {
  std::string repaired;
  if (!uni::is_valid_utf8(input)) {
    repaired = uni::make_valid_utf8(input);
    input = repaired;
  }
  if (input.size() > UINT32_MAX) fail("tokenizer: input of ", input.size(), " bytes is too long (limit 4 GiB)");
  PreTokenized pt(input);
  t.added.extract_and_normalize(t.normalizer.get(), pt);
  if (t.pre_tokenizer) t.pre_tokenizer->pre_tokenize(pt);
  for (Split& s : pt.splits) {
    if (s.tokenized) continue;
    t.model->tokenize(s.text.get(), s.tokens);
    s.tokenized = true;
  }

  Encoding e;
  size_t n = 0;
  for (const Split& s : pt.splits) n += s.tokens.size();
  e.ids.reserve(n);
  e.tokens.reserve(n);
  e.offsets.reserve(n);
  const CharOffsets chars(input);
  for (Split& s : pt.splits) {
    for (Token& tok : s.tokens) {
      // NormalizedString::convert_offsets: an empty range stays (shifted), one past the end
      // of the split keeps the model's offsets.
      size_t b = tok.b, en = tok.e;
      if (tok.b == tok.e) {
        b += s.text.original_begin(), en += s.text.original_begin();
      } else if (tok.b < tok.e && tok.e <= s.text.get().size()) {
        const Align a = s.text.original_range(tok.b, tok.e);
        b = a.b, en = a.e;
      }
      e.ids.push_back(tok.id);
      e.tokens.push_back(std::move(tok.value));
      e.offsets.push_back(chars.convert(b, en));
    }
  }
  e.type_ids.assign(n, type_id);
  e.special_tokens_mask.assign(n, 0);
  e.attention_mask.assign(n, 1);
  return e;
}

Encoding post_process(const Tokenizer::Impl& t, Encoding first, std::optional<Encoding> second,
                      bool add_special_tokens) {
  if (t.truncation) {
    TruncationParams p = *t.truncation;
    const size_t added = t.post_processor ? t.post_processor->added_tokens(second.has_value()) : 0;
    if (add_special_tokens && added > 0) {
      if (p.max_length < added)
        fail("truncation: max_length ", p.max_length, " leaves no room for the ", added, " special tokens");
      p.max_length -= added;
    }
    encoding_ops::truncate_encodings(first, second, p);
  }
  std::vector<Encoding> encs;
  encs.push_back(std::move(first));
  if (second) encs.push_back(std::move(*second));
  if (t.post_processor) {
    for (size_t i = 0; i < encs.size(); ++i) encs[i].type_ids.assign(encs[i].ids.size(), static_cast<int32_t>(i));
    t.post_processor->process(encs, add_special_tokens);
  }
  Encoding out = encs.size() == 1 && !t.post_processor ? std::move(encs[0]) : encoding_ops::merge(encs);
  if (t.padding) {
    std::vector<Encoding> one;
    one.push_back(std::move(out));
    encoding_ops::pad_encodings(one, *t.padding);
    out = std::move(one[0]);
  }
  return out;
}

}  // namespace

Encoding Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return post_process(*impl_, encode_sequence(*impl_, text, 0), std::nullopt, add_special_tokens);
}

Encoding Tokenizer::encode_pair(std::string_view first, std::string_view second, bool add_special_tokens) const {
  Encoding a = encode_sequence(*impl_, first, 0);
  return post_process(*impl_, std::move(a), encode_sequence(*impl_, second, 1), add_special_tokens);
}

void Tokenizer::pad_batch(std::vector<Encoding>& batch) const {
  if (impl_->padding) encoding_ops::pad_encodings(batch, *impl_->padding);
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    const std::string* tok = impl_->added.id_to_token(id);
    if (!tok) tok = impl_->model->id_to_token(id);
    if (!tok || (skip_special_tokens && impl_->added.is_special(*tok))) continue;  // unknown ids are dropped, as in HF
    tokens.push_back(*tok);
  }
  if (impl_->decoder) return impl_->decoder->decode(std::move(tokens));
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
  return out;
}

void Tokenizer::set_truncation(std::optional<TruncationParams> t) {
  if (t) {
    const size_t added = num_special_tokens_to_add(false);
    if (t->max_length < added || t->max_length - added <= t->stride)
      fail("truncation: stride ", t->stride, " must be smaller than max_length ", t->max_length, " minus the ", added,
           " special tokens");
  }
  impl_->truncation = std::move(t);
}

void Tokenizer::set_padding(std::optional<PaddingParams> p) { impl_->padding = std::move(p); }
const std::optional<TruncationParams>& Tokenizer::truncation() const { return impl_->truncation; }
const std::optional<PaddingParams>& Tokenizer::padding() const { return impl_->padding; }

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (auto id = impl_->added.token_to_id(token)) return id;
  return impl_->model->token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (const std::string* t = impl_->added.id_to_token(id)) return *t;
  if (const std::string* t = impl_->model->id_to_token(id)) return *t;
  return std::nullopt;
}

size_t Tokenizer::vocab_size() const {
  size_t n = impl_->model->vocab_size();
  for (const auto& [content, id] : impl_->added.contents())
    if (!impl_->model->token_to_id(content)) ++n;
  return n;
}

size_t Tokenizer::num_special_tokens_to_add(bool pair) const {
  return impl_->post_processor ? impl_->post_processor->added_tokens(pair) : 0;
}

}  // namespace strata::tok
