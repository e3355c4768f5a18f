// A byte trie over vocabulary entries, flattened into arrays: walking it finds every entry
// that is a prefix of a text in one pass (Unigram's lattice, WordPiece's longest match).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::tok {

class ByteTrie {
 public:
  // Keys with their values; a repeated key keeps its last value. Empty keys are ignored.
  void build(const std::vector<std::pair<std::string_view, int32_t>>& entries);

  // Calls f(value, length) for every key that is a prefix of s, shortest first.
  template <typename F>
  void common_prefixes(std::string_view s, F&& f) const {
    if (s.empty() || root_.empty()) return;
    int32_t node = root_[static_cast<unsigned char>(s[0])];
    for (size_t i = 1; node >= 0; ++i) {
      if (value_[static_cast<size_t>(node)] >= 0) f(value_[static_cast<size_t>(node)], i);
      if (i >= s.size()) break;
      node = child(node, static_cast<unsigned char>(s[i]));
    }
  }

 private:
  int32_t child(int32_t node, unsigned char b) const {
    for (uint32_t k = off_[static_cast<size_t>(node)]; k < off_[static_cast<size_t>(node) + 1]; ++k)
      if (labels_[k] == b) return targets_[k];
    return -1;
  }

  std::vector<int32_t> root_;  // 256 children of the root
  std::vector<uint32_t> off_;  // node i's children: labels_/targets_[off_[i], off_[i + 1])
  std::vector<unsigned char> labels_;
  std::vector<int32_t> targets_;
  std::vector<int32_t> value_;  // value of the key ending at each node, or -1
};

}  // namespace strata::tok
