// The tokenization models (WordPiece, BPE, Unigram): one pre-token in, tokens out, with byte
// offsets into that pre-token. Models are immutable after loading; tokenize() is thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace strata::tok {

struct Token {
  int32_t id;
  std::string value;
  uint32_t b, e;  // byte offsets in the tokenized text
};

// string -> id with lookups by string_view (no temporary strings in the hot loops).
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using Vocab = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class Model {
 public:
  virtual ~Model() = default;
  // Appends the tokens of `text` (one non-empty pre-token) to `out`.
  virtual void tokenize(std::string_view text, std::vector<Token>& out) const = 0;
  virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
  virtual const std::string* id_to_token(int32_t id) const = 0;
  virtual size_t vocab_size() const = 0;
};

// Ids -> tokens for a vocabulary whose ids may have gaps.
class ReverseVocab {
 public:
  explicit ReverseVocab(const Vocab& vocab);
  const std::string* find(int32_t id) const {
    if (id >= 0 && static_cast<size_t>(id) < tokens_.size())
      return present_[static_cast<size_t>(id)] ? &tokens_[static_cast<size_t>(id)] : nullptr;
    const auto it = sparse_.find(id);
    return it == sparse_.end() ? nullptr : &it->second;
  }

 private:
  // Ids are dense in real vocabularies, but HF accepts any non-negative ones: ids past
  // twice the vocabulary's size live in a map, so one id near INT32_MAX costs one entry, not
  // a table of 2^31 strings.
  std::vector<std::string> tokens_;
  std::vector<bool> present_;
  std::unordered_map<int32_t, std::string> sparse_;
};

// A model over a string -> id vocabulary (WordPiece, BPE): owns it and answers the
// vocabulary half of the Model interface for both.
class VocabModel : public Model {
 public:
  std::optional<int32_t> token_to_id(std::string_view token) const override {
    auto it = vocab_.find(token);
    return it == vocab_.end() ? std::nullopt : std::optional<int32_t>(it->second);
  }
  const std::string* id_to_token(int32_t id) const override { return reverse_.find(id); }
  size_t vocab_size() const override { return vocab_.size(); }

 protected:
  explicit VocabModel(Vocab vocab) : vocab_(std::move(vocab)), reverse_(vocab_) {}
  const Vocab vocab_;
  const ReverseVocab reverse_;
};

struct WordPieceConfig {
  Vocab vocab;
  std::string unk_token = "[UNK]";
  std::string continuing_subword_prefix = "##";
  size_t max_input_chars_per_word = 100;
};
std::unique_ptr<Model> make_wordpiece(WordPieceConfig config);

struct BpeConfig {
  Vocab vocab;
  std::vector<std::pair<std::string, std::string>> merges;
  std::optional<std::string> unk_token, continuing_subword_prefix, end_of_word_suffix;
  bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
};
std::unique_ptr<Model> make_bpe(BpeConfig config, const std::string& where);

struct UnigramConfig {
  std::vector<std::pair<std::string, double>> pieces;
  std::optional<size_t> unk_id;
  bool byte_fallback = false;
};
std::unique_ptr<Model> make_unigram(UnigramConfig config, const std::string& where);

// The "model" object of tokenizer.json; `where` names it in errors.
std::unique_ptr<Model> model_from_json(const nlohmann::json& j, const std::string& where);
// A vocab object {"token": id, ...} (tokenizer.json models, vocab.json).
Vocab vocab_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace strata::tok
