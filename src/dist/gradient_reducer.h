// Data-parallel gradient reduction over the flat gradient buffer (PyTorch DDP's reducer,
// made simple by the flat layout): buckets are fixed slices of the buffer, cut from its end
// backwards because backward finishes the last parameters first. As backward reports that
// every gradient at or above some offset is final, each bucket lying wholly above it is
// handed to a communication thread and summed across ranks while backward goes on.
//
// With ZeRO (`owners` given) the buffer is cut into the data-parallel ranks' slices, buckets
// never cross a slice boundary, and each bucket is reduced to the rank that owns it instead
// of all-reduced: afterwards a rank's own slice holds the sum, the rest only its local
// gradients. ZeRO-2 (`release_others`) then zeroes every bucket a rank does not own and gives
// its pages back to the OS, so between reductions a rank holds its slice plus the buckets
// that backward has written and the communication thread not yet reduced. To bound those,
// ZeRO-2 also holds backward back (in grads_final_from) while more than kMaxInFlight buckets
// wait for the communication thread: when communication is the slower side the step takes
// as long either way, and the gradients of a slow link no longer pile up.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "dist/communicator.h"
#include "dist/flat_shards.h"

namespace strata::dist {

class GradientReducer {
 public:
  // bucket_cap_elems: the most gradient values per bucket (ddp_bucket_cap_mb * 2^20 / 4).
  // owners: the ranks' slices for ZeRO (null: all-reduce, plain data parallelism); it must
  // outlive the reducer and cut `total` values into comm.size() parts.
  GradientReducer(Communicator& comm, float* grads, size_t total, size_t bucket_cap_elems,
                  const FlatShards* owners = nullptr, bool release_others = false);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  static constexpr size_t kMaxInFlight = 2;  // buckets, with release_others

  void begin_step();
  // Backward hook: every gradient at flat offset >= `offset` is final. With release_others it
  // returns once at most kMaxInFlight buckets are launched and not yet reduced.
  void grads_final_from(size_t offset);
  // Launches the buckets not launched yet, waits for all: the buffer (with ZeRO: this rank's
  // slice of it) then holds the sum over ranks. Returns the seconds the caller spent waiting
  // (communication not hidden).
  double finish_step();

  size_t num_buckets() const { return buckets_.size(); }
  double comm_seconds() const { return comm_seconds_; }  // time inside all-reduce, all steps so far
  // time finish_step (and the ZeRO-2 hook) waited, all steps so far
  double wait_seconds() const { return wait_seconds_; }

 private:
  struct Bucket {
    size_t begin, end;
    int owner;  // -1: all-reduce
  };
  void launch_up_to(size_t offset);
  void run();

  Communicator& comm_;
  float* grads_;
  bool release_others_;
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
