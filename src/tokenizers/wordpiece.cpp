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

class WordPiece final : public VocabModel {
 public:
  explicit WordPiece(WordPieceConfig c) : VocabModel(std::move(c.vocab)), c_(std::move(c)) {
    if (auto it = vocab_.find(c_.unk_token); it != vocab_.end()) unk_id_ = it->second;
    std::vector<std::pair<std::string_view, int32_t>> first, continuation;
    const std::string& prefix = c_.continuing_subword_prefix;
    for (const auto& [tok, id] : vocab_) {
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

 private:
  Token unk(size_t len) const {
    if (!unk_id_) fail("WordPiece: the unk token '", c_.unk_token, "' is not in the vocabulary");
    return {*unk_id_, c_.unk_token, 0, static_cast<uint32_t>(len)};
  }

  WordPieceConfig c_;
  ByteTrie first_, continuation_;  // all entries; the prefixed ones without their prefix
  std::optional<int32_t> unk_id_;
};

}  // namespace

std::unique_ptr<Model> make_wordpiece(WordPieceConfig config) { return std::make_unique<WordPiece>(std::move(config)); }

}  // namespace strata::tok
