// Hugging Face tokenizers, natively: the pipeline normalizer -> pre-tokenizer -> model ->
// post-processor (-> decoder), loaded from tokenizer.json or from the older vocab.txt /
// vocab.json + merges.txt files, producing exactly what the HF tokenizers library produces
// (ids, type ids, attention mask, special-tokens mask, character offsets, overflowing windows).
// encode()/decode() are const and thread-safe: the data loader's workers share one Tokenizer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::tok {

struct Encoding {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;
  std::vector<int32_t> attention_mask;
  std::vector<int32_t> special_tokens_mask;
  std::vector<std::string> tokens;
  // (begin, end) character offsets into the input text: Unicode code points, as the HF
  // Python/Node bindings report them; (0, 0) for special and padding tokens.
  std::vector<std::pair<size_t, size_t>> offsets;
  std::vector<Encoding> overflowing;  // further windows when truncation with overflow applies
};

enum class TruncationStrategy { LongestFirst, OnlyFirst, OnlySecond };
enum class PaddingStrategy { Longest, MaxLength };

struct TruncationParams {
  size_t max_length = 512;
  TruncationStrategy strategy = TruncationStrategy::LongestFirst;
  size_t stride = 0;
  bool right = true;  // truncate at the end
};

struct PaddingParams {
  PaddingStrategy strategy = PaddingStrategy::Longest;
  size_t max_length = 0;          // for MaxLength
  size_t pad_to_multiple_of = 0;  // 0 = off
  bool right = true;
  int32_t pad_id = 0;
  int32_t pad_type_id = 0;
  std::string pad_token = "[PAD]";
};

class Tokenizer {
 public:
  // DIR/tokenizer.json if present, else DIR/vocab.txt (+ tokenizer_config.json do_lower_case),
  // else DIR/vocab.json + DIR/merges.txt. Errors name the file and the unsupported component.
  static Tokenizer from_dir(const std::string& dir);
  static Tokenizer from_tokenizer_json(const std::string& path);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  Encoding encode(std::string_view text, bool add_special_tokens = true) const;
  Encoding encode_pair(std::string_view first, std::string_view second, bool add_special_tokens = true) const;
  // Pads a batch together (Longest / MaxLength, pad_to_multiple_of) as encode_batch does.
  void pad_batch(std::vector<Encoding>& batch) const;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = true) const;

  void set_truncation(std::optional<TruncationParams> t);
  void set_padding(std::optional<PaddingParams> p);
  const std::optional<TruncationParams>& truncation() const;
  const std::optional<PaddingParams>& padding() const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(int32_t id) const;
  size_t vocab_size() const;  // including added tokens
  // Number of special tokens the post-processor adds to a single / pair input.
  size_t num_special_tokens_to_add(bool pair) const;

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::tok
