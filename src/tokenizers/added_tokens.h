// Added tokens (special or not): found in the input before the pipeline runs, as HF's
// AddedVocabulary does: tokens with normalized=false are matched in the raw text, the others in
// the normalized text, leftmost-longest; single_word / lstrip / rstrip then filter and widen
// the matches.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tokenizers/models.h"
#include "tokenizers/normalizers.h"
#include "tokenizers/pre_tokenized.h"

namespace strata::tok {

struct AddedToken {
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = true, special = false;

  bool operator==(const AddedToken&) const = default;
};

class AddedVocabulary {
 public:
  // HF's add_tokens: a token keeps the id the added tokens or the model already give its
  // content, else gets the next free id; normalized tokens are matched by their normalized form.
  void add(const std::vector<AddedToken>& tokens, const Model& model, const Normalizer* normalizer);

  std::optional<int32_t> token_to_id(std::string_view content) const;
  // The string a token decodes from: its normalized form when normalization changed it.
  const std::string* id_to_token(int32_t id) const;
  bool is_special(std::string_view token) const { return special_.count(std::string(token)) > 0; }
  const Vocab& contents() const { return content_ids_; }

  // Splits the input into added tokens (tokenized splits) and the rest, normalized.
  void extract_and_normalize(const Normalizer* normalizer, PreTokenized& pt) const;

 private:
  struct Entry {
    AddedToken token;
    // What is matched, and what the token decodes from: its normalized form for normalized
    // tokens (when a normalizer is set), else its content.
    std::string pattern;
  };
  // Patterns grouped by first byte, longest first: the first that matches is leftmost-longest.
  using Matcher = std::vector<std::vector<std::pair<std::string, int32_t>>>;

  void rebuild_matchers();
  // Pieces covering s: (id, range) for added tokens, (-1, range) for the text between them.
  void find_matches(std::string_view s, const Matcher& m, std::vector<std::pair<int32_t, Match>>& out) const;
  void split_with(PreTokenized& pt, const Matcher& m, const Normalizer* normalize_first) const;

  std::unordered_map<int32_t, Entry> by_id_;
  Vocab content_ids_;
  std::unordered_set<std::string> special_;
  Matcher raw_, normalized_;
};

}  // namespace strata::tok
