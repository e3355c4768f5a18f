// Unigram: the segmentation with the highest total score (Viterbi over a byte trie of the
// pieces, as sentencepiece's optimized encoder and HF's Unigram::encode_optimized do).
// Characters no piece covers become the unk piece (score: lowest score - 10); adjacent unks
// are fused; with byte_fallback an unknown piece is spelled as <0xNN> byte tokens instead.
#include <algorithm>
#include <limits>

#include "tokenizers/byte_fallback.h"
#include "tokenizers/byte_trie.h"
#include "tokenizers/models.h"
#include "tokenizers/unicode.h"
#include "util/error.h"

namespace strata::tok {

namespace {

class Unigram final : public Model {
 public:
  Unigram(UnigramConfig c, const std::string& where) : c_(std::move(c)) {
    if (c_.unk_id) {
      if (c_.pieces.empty()) fail(where, ": the vocabulary is empty but unk_id is set");
      if (*c_.unk_id >= c_.pieces.size())
        fail(where, ".unk_id: ", *c_.unk_id, " is outside the vocabulary (", c_.pieces.size(), " pieces)");
    }
    min_score_ = std::numeric_limits<double>::infinity();
    for (size_t id = 0; id < c_.pieces.size(); ++id) {
      ids_[c_.pieces[id].first] = static_cast<int32_t>(id);
      min_score_ = std::min(min_score_, c_.pieces[id].second);
    }
    std::vector<std::pair<std::string_view, int32_t>> keys;
    keys.reserve(c_.pieces.size());
    for (size_t id = 0; id < c_.pieces.size(); ++id) keys.emplace_back(c_.pieces[id].first, static_cast<int32_t>(id));
    trie_.build(keys);
    if (c_.byte_fallback) byte_ids_ = byte_fallback::ByteIds(ids_);
  }

  void tokenize(std::string_view text, std::vector<Token>& out) const override {
    if (text.empty()) return;
    thread_local std::vector<Piece> pieces;
    segment(text, pieces);
    for (const auto& [b, e, id] : pieces) {
      const std::string_view piece = text.substr(b, e - b);
      // A vocabulary piece is its own id (HF looks the string up, which gives the same id);
      // only fused unknown runs need the lookup.
      if (id >= 0) {
        out.push_back({id, std::string(piece), b, e});
        continue;
      }
      if (auto it = ids_.find(piece); it != ids_.end()) {
        out.push_back({it->second, std::string(piece), b, e});
        continue;
      }
      if (c_.byte_fallback && byte_ids_.covers(piece)) {
        for (unsigned char ch : piece) out.push_back({byte_ids_[ch], byte_fallback::token_name(ch), b, e});
        continue;
      }
      out.push_back({unk_id(), std::string(piece), b, e});
    }
  }

  std::optional<int32_t> token_to_id(std::string_view token) const override {
    auto it = ids_.find(token);
    return it == ids_.end() ? std::nullopt : std::optional<int32_t>(it->second);
  }
  const std::string* id_to_token(int32_t id) const override {
    return id >= 0 && static_cast<size_t>(id) < c_.pieces.size() ? &c_.pieces[static_cast<size_t>(id)].first : nullptr;
  }
  size_t vocab_size() const override { return c_.pieces.size(); }

 private:
  int32_t unk_id() const {
    if (!c_.unk_id) fail("Unigram: an unknown piece needs unk_id, which the model does not set");
    return static_cast<int32_t>(*c_.unk_id);
  }

  struct Piece {
    uint32_t b, e;
    int32_t id;  // -1 for a fused run of unknown characters
  };

  // Best segmentation of `text` as byte ranges, unknown runs fused.
  void segment(std::string_view text, std::vector<Piece>& out) const {
    struct Best {
      double score = 0;
      int32_t id = 0;
      int64_t start = -1;  // -1: no path ends here yet
    };
    thread_local std::vector<Best> best;
    const size_t n = text.size();
    best.assign(n + 1, Best{});
    const double unk_score = min_score_ - 10.0;
    for (size_t start = 0; start < n;) {
      const double here = best[start].score;
      const size_t mblen = uni::seq_len(static_cast<unsigned char>(text[start]));
      bool single = false;
      trie_.common_prefixes(text.substr(start), [&](int32_t id, size_t len) {
        Best& t = best[start + len];
        const double cand = c_.pieces[static_cast<size_t>(id)].second + here;
        if (t.start < 0 || cand > t.score) t = {cand, id, static_cast<int64_t>(start)};
        single |= len == mblen;
      });
      if (!single) {
        Best& t = best[start + mblen];
        const double cand = unk_score + here;
        if (t.start < 0 || cand > t.score) t = {cand, unk_id(), static_cast<int64_t>(start)};
      }
      start += mblen;
    }
    out.clear();
    const int64_t unk = c_.unk_id ? static_cast<int64_t>(*c_.unk_id) : -1;
    size_t unk_end = 0;  // end of the unk run being fused, 0 if none
    for (size_t end = n; end > 0;) {
      const Best& node = best[end];
      const auto start = static_cast<size_t>(node.start);
      if (node.id == unk) {
        if (unk_end == 0) unk_end = end;
      } else {
        if (unk_end != 0) {
          out.push_back({static_cast<uint32_t>(end), static_cast<uint32_t>(unk_end), -1});
          unk_end = 0;
        }
        out.push_back({static_cast<uint32_t>(start), static_cast<uint32_t>(end), node.id});
      }
      end = start;
    }
    if (unk_end != 0) out.push_back({0, static_cast<uint32_t>(unk_end), -1});
    std::reverse(out.begin(), out.end());
  }

  UnigramConfig c_;
  Vocab ids_;
  ByteTrie trie_;
  double min_score_;
  byte_fallback::ByteIds byte_ids_;  // all -1 without byte_fallback
};

}  // namespace

std::unique_ptr<Model> make_unigram(UnigramConfig config, const std::string& where) {
  return std::make_unique<Unigram>(std::move(config), where);
}

}  // namespace strata::tok
