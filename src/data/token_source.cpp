#include "data/token_source.h"

#include <algorithm>
#include <exception>
#include <thread>

#include "util/error.h"

namespace strata::data {

namespace {
size_t bytes_of(const Encoded& e) {
  return sizeof(Encoded) + e.ids.size() * sizeof(int32_t) + e.type_ids.size() * sizeof(int32_t) +
         e.special_mask.size();
}
}  // namespace

EncodedTexts::EncodedTexts(std::shared_ptr<const TextDataset> data, std::shared_ptr<const TextEncoder> encoder,
                           size_t budget_bytes)
    : data_(std::move(data)), encoder_(std::move(encoder)), budget_bytes_(budget_bytes), kept_(data_->size()) {}

Encoded EncodedTexts::get(size_t i) const {
  {
    std::lock_guard lock(mu_);
    if (kept_.at(i)) return *kept_[i];
  }
  Encoded e = encode(i);  // outside the lock: workers tokenize in parallel
  const size_t bytes = bytes_of(e);
  std::lock_guard lock(mu_);
  if (!kept_[i] && kept_bytes_ + bytes <= budget_bytes_) {
    kept_bytes_ += bytes;
    kept_[i] = e;
  }
  return e;
}

size_t EncodedTexts::kept_bytes() const {
  std::lock_guard lock(mu_);
  return kept_bytes_;
}

Encoded EncodedTexts::encode(size_t i) const {
  std::string text, pair;
  data_->texts(i, text, pair);
  return data_->has_pair() ? encoder_->encode(text, pair) : encoder_->encode(text);
}

TokenBlocks::TokenBlocks(const TextDataset& data, const TextEncoder& encoder, size_t block_size, int num_threads,
                         size_t texts_per_group)
    : block_(block_size) {
  if (block_size == 0) fail("block size for grouped texts must be > 0");
  if (encoder.max_length() != 0)
    fail("grouping texts into blocks needs an encoder without truncation (it truncates to ", encoder.max_length(),
         " tokens, which would cut long texts before grouping)");
  const size_t n = data.size();
  const size_t group = texts_per_group > 0 ? texts_per_group : std::max<size_t>(n, 1);
  const size_t num_groups = (n + group - 1) / group;
  // Whole groups per thread, so that each thread can drop its groups' remainders; the parts
  // are joined in order afterwards.
  const size_t parts = std::max<size_t>(1, std::min<size_t>(num_threads > 0 ? num_threads : 1, num_groups));
  std::vector<std::vector<int32_t>> ids(parts);
  std::vector<std::vector<uint8_t>> special(parts);
  std::vector<size_t> tokens(parts, 0);
  std::vector<std::exception_ptr> errors(parts);
  auto work = [&](size_t p) {
    try {
      std::string text, pair;
      for (size_t g = num_groups * p / parts; g < num_groups * (p + 1) / parts; ++g) {
        const size_t start = ids[p].size();
        for (size_t i = g * group; i < std::min(n, (g + 1) * group); ++i) {
          data.texts(i, text, pair);
          const Encoded e = data.has_pair() ? encoder.encode(text, pair) : encoder.encode(text);
          ids[p].insert(ids[p].end(), e.ids.begin(), e.ids.end());
          if (e.special_mask.empty())
            special[p].resize(ids[p].size(), 0);
          else
            special[p].insert(special[p].end(), e.special_mask.begin(), e.special_mask.end());
        }
        const size_t len = ids[p].size() - start;
        tokens[p] += len;
        ids[p].resize(start + len / block_ * block_);
        special[p].resize(ids[p].size());
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
  size_t total = 0;
  for (size_t p = 0; p < parts; ++p) {
    total += tokens[p];
    ids_.insert(ids_.end(), ids[p].begin(), ids[p].end());
    special_.insert(special_.end(), special[p].begin(), special[p].end());
    std::vector<int32_t>().swap(ids[p]);
    std::vector<uint8_t>().swap(special[p]);
  }
  num_blocks_ = ids_.size() / block_;
  if (num_blocks_ == 0)
    fail(data.path(), ": its ", n, " texts give ", total, " tokens, ",
         num_groups > 1 ? cat("in groups of ", group, " texts each ") : std::string(), "fewer than one block of ",
         block_, " tokens (the remainder of each group is dropped, as HF group_texts does); use a smaller "
         "block_size / max_seq_length, or line_by_line");
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
