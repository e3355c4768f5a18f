#include "dist/gradient_reducer.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "kernels/device.h"
#include "util/error.h"

namespace strata::dist {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

GradientReducer::GradientReducer(Communicator& comm, float* grads, size_t total, size_t cap,
                                 const FlatShards* owners, bool release_others)
    : comm_(comm), grads_(grads), release_others_(release_others && owners) {
  STRATA_CHECK(!owners || (owners->total() == total && owners->parts() == comm.size()),
               "GradientReducer: the slices cut ", owners ? owners->total() : 0, " values into ",
               owners ? owners->parts() : 0, " parts, the buffer has ", total, " values and the group ", comm.size(),
               " ranks");
  cap = std::max<size_t>(cap, 1);
  for (size_t end = total; end > 0;) {
    size_t begin = end > cap ? end - cap : 0;
    int owner = -1;
    if (owners) {
      owner = owners->owner(end - 1);
      begin = std::max(begin, owners->begin(owner));
    }
    buckets_.push_back({begin, end, owner});
    end = begin;
  }
  thread_ = std::thread([this] { run(); });
}

GradientReducer::~GradientReducer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void GradientReducer::begin_step() {
  std::lock_guard<std::mutex> lock(mu_);
  next_launch_ = 0;
  done_ = 0;
}

void GradientReducer::launch_up_to(size_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  bool any = false;
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].begin >= offset) {
    queue_.push_back(next_launch_++);
    any = true;
  }
  if (any) cv_.notify_all();
}

void GradientReducer::grads_final_from(size_t offset) {
  launch_up_to(offset);
  if (!release_others_) return;
  const auto t0 = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return next_launch_ - done_ <= kMaxInFlight; });
  wait_seconds_ += since(t0);
}

double GradientReducer::finish_step() {
  const auto t0 = Clock::now();
  launch_up_to(0);
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_ == buckets_.size(); });
  const double waited = since(t0);
  wait_seconds_ += waited;
  return waited;
}

void GradientReducer::run() {
  for (;;) {
    size_t k;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      k = queue_.front();
      queue_.pop_front();
    }
    const Bucket& b = buckets_[k];
    const std::string what = "gradient bucket " + std::to_string(k);
    const auto t0 = Clock::now();
    if (b.owner < 0) {
      comm_.all_reduce_sum(grads_ + b.begin, b.end - b.begin, what.c_str());
    } else {
      comm_.reduce_sum(grads_ + b.begin, b.end - b.begin, b.owner, what.c_str());
      if (release_others_ && b.owner != comm_.rank())
        kernels::zero_and_release(grads_ + b.begin, (b.end - b.begin) * sizeof(float));
    }
    const double secs = since(t0);
    {
      std::lock_guard<std::mutex> lock(mu_);
      comm_seconds_ += secs;
      ++done_;
    }
    cv_.notify_all();
  }
}

}  // namespace strata::dist
