#include "tokenizers/byte_trie.h"

#include <map>

namespace strata::tok {

void ByteTrie::build(const std::vector<std::pair<std::string_view, int32_t>>& entries) {
  std::vector<std::map<unsigned char, int32_t>> kids(1);
  std::vector<int32_t> value(1, -1);
  for (const auto& [key, v] : entries) {
    if (key.empty()) continue;
    int32_t node = 0;
    for (unsigned char b : key) {
      auto& children = kids[static_cast<size_t>(node)];
      auto it = children.find(b);
      if (it != children.end()) {
        node = it->second;
        continue;
      }
      const auto child = static_cast<int32_t>(kids.size());
      children[b] = child;
      kids.emplace_back();
      value.push_back(-1);
      node = child;
    }
    value[static_cast<size_t>(node)] = v;
  }
  value_ = std::move(value);
  off_.assign(kids.size() + 1, 0);
  labels_.clear();
  targets_.clear();
  for (size_t i = 0; i < kids.size(); ++i) {
    off_[i + 1] = off_[i] + static_cast<uint32_t>(kids[i].size());
    for (const auto& [b, child] : kids[i]) {
      labels_.push_back(b);
      targets_.push_back(child);
    }
  }
  root_.assign(256, -1);
  for (const auto& [b, child] : kids[0]) root_[b] = child;
}

}  // namespace strata::tok
