// A flat buffer of `total` values cut into `parts` contiguous slices, one per data-parallel
// rank (ZeRO): rank r owns [begin(r), end(r)). Every slice has shard_size() values except
// the last ones, which the end of the buffer cuts short; shard_size() is ceil(total / parts)
// rounded up to 16 values (64 bytes), so each slice starts on a cache line and parts x
// shard_size() = total + padding(). The padding is never allocated: it only says how far the
// slices are from equal.
#pragma once
#include <cstddef>
#include <vector>

namespace strata::dist {

class FlatShards {
 public:
  FlatShards(size_t total, int parts);

  size_t total() const { return total_; }
  int parts() const { return parts_; }
  size_t shard_size() const { return shard_; }
  size_t padding() const { return static_cast<size_t>(parts_) * shard_ - total_; }
  size_t begin(int r) const;
  size_t end(int r) const;
  size_t size(int r) const { return end(r) - begin(r); }
  int owner(size_t offset) const;         // the rank whose slice holds `offset` (< total)
  std::vector<size_t> sizes() const;      // size(r) for every rank, for all_gather_v

  static constexpr size_t kAlign = 16;    // values

 private:
  size_t total_;
  int parts_;
  size_t shard_;
};

}  // namespace strata::dist
