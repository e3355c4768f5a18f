#include "dist/flat_shards.h"

#include <algorithm>

#include "util/error.h"

namespace strata::dist {

FlatShards::FlatShards(size_t total, int parts) : total_(total), parts_(parts) {
  STRATA_CHECK(parts >= 1, "a flat buffer is cut into at least one slice, got ", parts);
  const size_t even = (total + static_cast<size_t>(parts) - 1) / static_cast<size_t>(parts);
  shard_ = std::max<size_t>(kAlign, (even + kAlign - 1) / kAlign * kAlign);
}

size_t FlatShards::begin(int r) const { return std::min(total_, static_cast<size_t>(r) * shard_); }
size_t FlatShards::end(int r) const { return std::min(total_, static_cast<size_t>(r + 1) * shard_); }

int FlatShards::owner(size_t offset) const {
  STRATA_CHECK(offset < total_, "offset ", offset, " is past the flat buffer of ", total_, " values");
  return static_cast<int>(offset / shard_);
}

std::vector<size_t> FlatShards::sizes() const {
  std::vector<size_t> s;
  for (int r = 0; r < parts_; ++r) s.push_back(size(r));
  return s;
}

}  // namespace strata::dist
