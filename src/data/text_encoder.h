// TextEncoder: what the data layer needs from a tokenizer, and nothing more. Datasets,
// collators and masking are written against it, so they are tested with a trivial encoder
// and run in training through TokenizerEncoder (tokenizer_encoder.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::data {

// One encoded example, without padding. special_mask marks tokens the post-processor added
// ([CLS], [SEP], <s>, ...): masked-LM never masks those, and truncation keeps a final one.
struct Encoded {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;      // same length as ids, or empty: all zeros
  std::vector<uint8_t> special_mask;  // same length as ids, or empty: no special tokens
};

class TextEncoder {
 public:
  virtual ~TextEncoder() = default;
  // Both are const and must be safe to call from several loader threads at once. Results are
  // truncated to max_length() tokens, special tokens included (0: no truncation).
  virtual Encoded encode(std::string_view text) const = 0;
  virtual Encoded encode(std::string_view text, std::string_view pair) const = 0;
  virtual size_t max_length() const = 0;
  virtual int32_t pad_id() const = 0;
  virtual size_t vocab_size() const = 0;
  // The id of [MASK] / <mask>, for masked-LM; nullopt when the vocabulary has none.
  virtual std::optional<int32_t> mask_id() const = 0;
  // The vocabulary's spelling of `id` ("##ing", "Ġthe", "▁the"), which whole-word masking reads
  // word boundaries from; nullopt when unknown (the default: an encoder without a vocabulary).
  virtual std::optional<std::string> id_to_token(int32_t) const { return std::nullopt; }
};

// A TextEncoder assembled from functions: the seam through which tests (and tools without a
// tokenizer file) plug in their own encoding.
class FunctionEncoder final : public TextEncoder {
 public:
  using SingleFn = std::function<Encoded(std::string_view)>;
  using PairFn = std::function<Encoded(std::string_view, std::string_view)>;
  struct Spec {
    SingleFn single;
    PairFn pair;
    size_t max_length = 0;
    int32_t pad_id = 0;
    size_t vocab_size = 0;
    std::optional<int32_t> mask_id;
    std::function<std::optional<std::string>(int32_t)> id_to_token;  // may be empty
  };
  explicit FunctionEncoder(Spec spec) : s_(std::move(spec)) {}

  Encoded encode(std::string_view text) const override { return s_.single(text); }
  Encoded encode(std::string_view text, std::string_view pair) const override { return s_.pair(text, pair); }
  size_t max_length() const override { return s_.max_length; }
  int32_t pad_id() const override { return s_.pad_id; }
  size_t vocab_size() const override { return s_.vocab_size; }
  std::optional<int32_t> mask_id() const override { return s_.mask_id; }
  std::optional<std::string> id_to_token(int32_t id) const override {
    return s_.id_to_token ? s_.id_to_token(id) : std::nullopt;
  }

 private:
  Spec s_;
};

}  // namespace strata::data
