// DataLoader: batches of an epoch in an order that depends only on (seed, epoch), made ahead
// on dataloader_num_workers threads and delivered in order. Each epoch's example order is a
// seeded permutation (sampler.h), cut into batches per BatchPlan (rank / world_size shards);
// start(epoch, k) begins at batch k without making the batches before it (exact resume).
// Worker threads claim batch numbers in order and may run at most
// prefetch_per_worker * num_workers batches ahead of the consumer, which bounds memory; since
// a batch is a pure function of (epoch, its examples), 0, 1 or 8 workers give byte-identical
// batches. An error while making batch j is rethrown when batch j is asked for.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "data/batch_maker.h"
#include "data/sampler.h"
#include "core/batch_stream.h"

namespace strata::data {

struct LoaderOptions {
  size_t batch_size = 8;
  bool shuffle = true;  // false: dataset order, as for evaluation and prediction
  bool drop_last = false;
  uint64_t seed = 42;
  int num_workers = 0;  // 0: batches are made on the calling thread, in next()
  size_t prefetch_per_worker = 2;
  size_t rank = 0, world_size = 1;
};

class DataLoader final : public BatchStream {
 public:
  DataLoader(std::shared_ptr<const BatchMaker> maker, LoaderOptions opts);
  ~DataLoader() override;
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  size_t num_batches() const override { return plan_.num_batches(); }  // this rank's, per epoch
  size_t num_examples() const override { return plan_.num_examples; }  // the whole dataset's
  void start(int64_t epoch, size_t first_batch) override;
  bool next(Batch& out) override;

  // The dataset indices of this rank's batch j of `epoch`.
  std::vector<size_t> batch_examples(int64_t epoch, size_t j) const;

 private:
  struct Slot {
    bool ready = false;
    Batch batch;
    std::exception_ptr error;
  };
  std::vector<size_t> epoch_order(int64_t epoch) const;
  Batch make(size_t j) const;
  void work();
  void stop_workers();

  std::shared_ptr<const BatchMaker> maker_;
  LoaderOptions opts_;
  BatchPlan plan_;
  bool started_ = false;
  int64_t epoch_ = 0;
  std::vector<size_t> order_;  // this epoch's example order; read-only while workers run

  // Shared with the workers, under mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Slot> ring_;  // batch j lives in ring_[j % ring_.size()] until delivered
  size_t next_claim_ = 0, next_deliver_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace strata::data
