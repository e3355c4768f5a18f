// What the Trainer needs from the data side: batches of one epoch, in an order that depends
// only on (seed, epoch), startable at any batch (exact resume). The data loader implements it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/batch.h"

namespace strata {

class BatchStream {
 public:
  virtual ~BatchStream() = default;
  virtual size_t num_batches() const = 0;  // per epoch
  virtual size_t num_examples() const = 0;
  // Positions the stream at batch `first_batch` of epoch `epoch`.
  virtual void start(int64_t epoch, size_t first_batch) = 0;
  // The next batch of the epoch; false when the epoch is over.
  virtual bool next(Batch& out) = 0;
};

}  // namespace strata
