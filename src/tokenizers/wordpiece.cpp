// WordPiece: greedy longest-match-first from the left, continuation pieces carry the prefix
// ("##"); a word with an unknown part, or longer than max_input_chars_per_word, is one unk.
// HF tries ever shorter substrings against the vocabulary; the longest vocabulary entry that
// is a prefix of the rest of the word is the same answer, found here with one trie walk.
#include "tokenizers/byte_trie.h"
#include "tokenizers/models.h"
#include "tokenizers/unicode.h"
#include "util/error.h"

namespace strata::tok {

namespace {

class WordPiece final : public Model {
 public:
  explicit WordPiece(WordPieceConfig c) : c_(std::move(c)), reverse_(c_.vocab) {
    if (auto it = c_.vocab.find(c_.unk_token); it != c_.vocab.end()) unk_id_ = it->second;
    std::vector<std::pair<std::string_view, int32_t>> first, continuation;
    const std::string& prefix = c_.continuing_subword_prefix;
    for (const auto& [tok, id] : c_.vocab) {
      first.emplace_back(tok, id);
      if (tok.compare(0, prefix.size(), prefix) == 0)
        continuation.emplace_back(std::string_view(tok).substr(prefix.size()), id);
    }
    first_.build(first);
    continuation_.build(continuation);
  }

  void tokenize(std::string_view text, std::vector<Token>& out) const override {
    size_t chars = 0;
    for (size_t i = 0; i < text.size(); i += uni::seq_len(static_cast<unsigned char>(text[i]))) ++chars;
    if (chars > c_.max_input_chars_per_word) {
      out.push_back(unk(text.size()));
      return;
    }
    const size_t first = out.size();
    for (size_t start = 0; start < text.size();) {
      int32_t id = -1;
      size_t len = 0;
      (start == 0 ? first_ : continuation_).common_prefixes(text.substr(start), [&](int32_t v, size_t n) {
        id = v;
        len = n;
      });
      if (id < 0) {
        out.resize(first);
        out.push_back(unk(text.size()));
        return;
      }
      std::string value = start == 0 ? std::string() : c_.continuing_subword_prefix;
      value.append(text.substr(start, len));
      out.push_back({id, std::move(value), static_cast<uint32_t>(start), static_cast<uint32_t>(start + len)});
      start += len;
    }
  }

  std::optional<int32_t> token_to_id(std::string_view token) const override {
    auto it = c_.vocab.find(token);
    return it == c_.vocab.end() ? std::nullopt : std::optional<int32_t>(it->second);
  }
  const std::string* id_to_token(int32_t id) const override { return reverse_.find(id); }
  size_t vocab_size() const override { return c_.vocab.size(); }

 private:
  Token unk(size_t len) const {
    if (!unk_id_) fail("WordPiece: the unk token '", c_.unk_token, "' is not in the vocabulary");
    return {*unk_id_, c_.unk_token, 0, static_cast<uint32_t>(len)};
  }

  WordPieceConfig c_;
  ReverseVocab reverse_;
  ByteTrie first_, continuation_;  // all entries; the prefixed ones without their prefix
  std::optional<int32_t> unk_id_;
};

}  // namespace

std::unique_ptr<Model> make_wordpiece(WordPieceConfig config) { return std::make_unique<WordPiece>(std::move(config)); }

}  // namespace strata::tok
