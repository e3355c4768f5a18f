// HF's PreTokenizedString: the input cut into splits, each a NormalizedString that later
// becomes tokens. Splits already holding tokens (added tokens) are never touched again.
#pragma once
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizers/models.h"
#include "tokenizers/normalized_string.h"

namespace strata::tok {

struct Split {
  NormalizedString text;
  std::vector<Token> tokens;
  bool tokenized = false;
};

class PreTokenized {
 public:
  explicit PreTokenized(std::string_view original) { splits.push_back({NormalizedString(original), {}, false}); }

  // Replaces every untokenized split by the pieces f(piece, out) appends to out; empty pieces
  // are dropped.
  template <typename F>
  void split(F&& f) {
    thread_local std::vector<Split> next;  // buffers reused across calls
    thread_local std::vector<NormalizedString> pieces;
    next.clear();
    for (Split& s : splits) {
      if (s.tokenized) {
        next.push_back(std::move(s));
        continue;
      }
      pieces.clear();
      f(std::move(s.text), pieces);
      for (NormalizedString& p : pieces)
        if (!p.empty()) next.push_back({std::move(p), {}, false});
    }
    splits.swap(next);
    next.clear();
  }

  template <typename F>
  void normalize(F&& f) {
    for (Split& s : splits)
      if (!s.tokenized) f(s.text);
  }

  std::vector<Split> splits;
};

}  // namespace strata::tok
