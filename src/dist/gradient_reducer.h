// Data-parallel gradient reduction over the flat gradient buffer (PyTorch DDP's reducer,
// made simple by the flat layout): buckets are fixed slices of the buffer, cut from its end
// backwards because backward finishes the last parameters first. As backward reports that
// every gradient at or above some offset is final, each bucket lying wholly above it is
// handed to a communication thread and summed across ranks while backward goes on.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "dist/communicator.h"

namespace strata::dist {

class GradientReducer {
 public:
  // bucket_cap_elems: the most gradient values per bucket (ddp_bucket_cap_mb * 2^20 / 4).
  GradientReducer(Communicator& comm, float* grads, size_t total, size_t bucket_cap_elems);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  void begin_step();
  // Backward hook: every gradient at flat offset >= `offset` is final.
  void grads_final_from(size_t offset);
  // Launches the buckets not launched yet, waits for all: the buffer then holds the sum over
  // ranks. Returns the seconds the caller spent waiting (communication not hidden).
  double finish_step();

  size_t num_buckets() const { return buckets_.size(); }
  double comm_seconds() const { return comm_seconds_; }  // time inside all-reduce, all steps so far
  double wait_seconds() const { return wait_seconds_; }  // time finish_step waited, all steps so far

 private:
  struct Bucket {
    size_t begin, end;
  };
  void launch_up_to(size_t offset);
  void run();

  Communicator& comm_;
  float* grads_;
  std::vector<Bucket> buckets_;  // buckets_[0] is the last slice of the buffer
  size_t next_launch_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<size_t> queue_;
  size_t done_ = 0;
  bool stop_ = false;
  double comm_seconds_ = 0, wait_seconds_ = 0;
  std::thread thread_;
};

}  // namespace strata::dist
