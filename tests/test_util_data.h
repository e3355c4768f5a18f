// Shared by the data-layer test files: batches as bytes, so that "identical" means
// byte-identical, and the batches of one loader epoch.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/batch.h"
#include "data/loader.h"

namespace strata::test {

inline std::string bytes_of(const Batch& b) {
  std::string s = std::to_string(b.B) + "x" + std::to_string(b.T) + ";";
  auto add = [&](const auto& v) {
    s.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(v[0]));
    s += '|';
  };
  add(b.input_ids);
  add(b.attention_mask);
  add(b.token_type_ids);
  add(b.labels);
  add(b.float_labels);
  return s;
}

// The batches of `epoch` from batch `first` on.
inline std::vector<std::string> epoch_batches(data::DataLoader& dl, int64_t epoch, size_t first = 0) {
  std::vector<std::string> out;
  dl.start(epoch, first);
  Batch b;
  while (dl.next(b)) out.push_back(bytes_of(b));
  return out;
}

}  // namespace strata::test
