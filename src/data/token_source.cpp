#include "data/token_source.h"

#include <algorithm>
#include <exception>
#include <thread>

#include "util/error.h"

namespace strata::data {

Encoded EncodedTexts::get(size_t i) const {
  std::string text, pair;
  data_->texts(i, text, pair);
  return data_->has_pair() ? encoder_->encode(text, pair) : encoder_->encode(text);
}

TokenBlocks::TokenBlocks(const TextDataset& data, const TextEncoder& encoder, size_t block_size, int num_threads)
    : block_(block_size) {
  if (block_size == 0) fail("masked-LM block size (max_seq_length) must be > 0");
  if (encoder.max_length() != 0)
    fail("grouping texts into blocks needs an encoder without truncation (it truncates to ", encoder.max_length(),
         " tokens, which would cut long texts before grouping)");
  // Contiguous ranges of texts per thread, joined in order afterwards.
  const size_t n = data.size();
  const size_t parts = std::max<size_t>(1, std::min<size_t>(num_threads > 0 ? num_threads : 1, n));
  std::vector<std::vector<int32_t>> ids(parts);
  std::vector<std::vector<uint8_t>> special(parts);
  std::vector<std::exception_ptr> errors(parts);
  auto work = [&](size_t p) {
    try {
      std::string text, pair;
      for (size_t i = n * p / parts; i < n * (p + 1) / parts; ++i) {
        data.texts(i, text, pair);
        const Encoded e = data.has_pair() ? encoder.encode(text, pair) : encoder.encode(text);
        ids[p].insert(ids[p].end(), e.ids.begin(), e.ids.end());
        if (e.special_mask.empty())
          special[p].resize(ids[p].size(), 0);
        else
          special[p].insert(special[p].end(), e.special_mask.begin(), e.special_mask.end());
      }
    } catch (...) {
      errors[p] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (size_t p = 1; p < parts; ++p) threads.emplace_back(work, p);
  work(0);
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  for (size_t p = 0; p < parts; ++p) {
    ids_.insert(ids_.end(), ids[p].begin(), ids[p].end());
    special_.insert(special_.end(), special[p].begin(), special[p].end());
    std::vector<int32_t>().swap(ids[p]);
    std::vector<uint8_t>().swap(special[p]);
  }
  if (ids_.empty()) fail(data.path(), ": no tokens to group into blocks");
  if (ids_.size() >= block_) {
    num_blocks_ = ids_.size() / block_;
    ids_.resize(num_blocks_ * block_);
    special_.resize(num_blocks_ * block_);
  } else {
    block_ = ids_.size();
    num_blocks_ = 1;
  }
  ids_.shrink_to_fit();
  special_.shrink_to_fit();
}

Encoded TokenBlocks::get(size_t i) const {
  Encoded e;
  const auto b = static_cast<std::ptrdiff_t>(i * block_), len = static_cast<std::ptrdiff_t>(block_);
  e.ids.assign(ids_.begin() + b, ids_.begin() + b + len);
  e.special_mask.assign(special_.begin() + b, special_.begin() + b + len);
  return e;
}

}  // namespace strata::data
