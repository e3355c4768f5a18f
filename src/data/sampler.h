// Example order: seeded permutations that are the same on every platform and standard
// library (std::shuffle and std::uniform_int_distribution are implementation-defined), and
// the split of an epoch's order into per-rank batches.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "util/rng.h"

namespace strata::data {

// Counter streams of the data layer's random draws, kept apart so that no two uses of one
// seed see correlated numbers.
enum class RngDomain : uint64_t { Shuffle = 1, ValidationSplit = 2, Masking = 3, WordShuffle = 4 };

// stream id for (domain, epoch, item): distinct for epoch < 2^20 and item < 2^40.
inline uint64_t rng_stream(RngDomain d, uint64_t epoch, uint64_t item = 0) {
  return (static_cast<uint64_t>(d) << 60) ^ (epoch << 40) ^ item;
}

// Successive uniform draws from one counter stream.
class Draws {
 public:
  Draws(uint64_t seed, uint64_t stream) : rng_(seed, stream) {}
  uint64_t bits() { return rng_.bits(counter_++); }
  // Exactly uniform in [0, n), n > 0 (Lemire's multiply-and-reject).
  uint64_t below(uint64_t n);

 private:
  CounterRng rng_;
  uint64_t counter_ = 0;
};

// A Fisher-Yates shuffle of 0..n-1 driven by Draws(seed, stream).
std::vector<size_t> permutation(size_t n, uint64_t seed, uint64_t stream);

// How one epoch's order (of num_examples positions) becomes batches for `rank` of
// `world_size`. Global batch j is positions [j*B*W, (j+1)*B*W) (B = batch_size, W =
// world_size); rank r takes its r-th contiguous share. Every rank gets the same number of
// batches and the ranks' batches j are disjoint and together exactly global batch j. The last
// global batch, when partial, is split as evenly as possible (shares differ by at most one
// example, lower ranks take the extra), so nothing is dropped or repeated: a rank's last batch
// may be smaller than B, or empty when fewer examples than ranks remain. drop_last drops that
// partial global batch on every rank.
struct BatchPlan {
  size_t num_examples = 0, batch_size = 1, world_size = 1, rank = 0;
  bool drop_last = false;

  size_t num_batches() const;
  // [begin, end) positions in the epoch's order of this rank's batch j.
  std::pair<size_t, size_t> range(size_t j) const;
};

}  // namespace strata::data
