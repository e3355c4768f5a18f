// What the DataLoader runs on its threads: dataset examples (by index) -> one Batch.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/batch.h"

namespace strata::data {

class BatchMaker {
 public:
  virtual ~BatchMaker() = default;
  virtual size_t size() const = 0;  // number of examples
  // The batch of `examples`, in that order. Called from several threads at once; the result
  // must depend on the arguments only (masking draws from (seed, epoch, example)), which is
  // what makes batches independent of the worker count.
  virtual Batch make(std::span<const size_t> examples, uint64_t epoch) const = 0;
};

}  // namespace strata::data
