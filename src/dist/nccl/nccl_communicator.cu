// The NCCL communicator (dist/nccl_communicator.h): device buffers over NCCL on a stream of its
// own, ordered against the compute stream by events; host buffers and control over `control`.
// Host-only code, compiled by nvcc with the rest of the CUDA backend.
#include <nccl.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dist/nccl/nccl_api.cuh"
#include "dist/nccl_communicator.h"
#include "kernels/cuda/check.h"
#include "kernels/device.h"
#include "kernels/emulated_gpu.h"
#include "util/error.h"

namespace strata::dist {

namespace {

using Clock = std::chrono::steady_clock;
using nccl::nccl_api;

// Memory of a GPU (or managed memory) goes to NCCL; plain and pinned host memory to `control`.
bool on_device(const void* p) { return kernels::is_device_memory(p); }

void check_nccl(ncclResult_t r, const char* call, const std::string& what) {
  if (r != ncclSuccess)
    throw std::runtime_error(std::string("NCCL ") + call + " '" + what + "' failed: " + nccl_api().GetErrorString(r));
}

// The compute stream of the current device (kernels/device.h), where the ops run.
cudaStream_t compute_stream() { return static_cast<cudaStream_t>(kernels::compute_stream().handle); }

class NcclCommunicator;

// A point-to-point message queued on the communicator's stream: complete once its event is.
class NcclRequest final : public Request {
 public:
  explicit NcclRequest(cudaEvent_t done) : done_(done) {}
  ~NcclRequest() override { cudaEventDestroy(done_); }
  // The compute stream's later work runs after the message (the host does not wait).
  void wait() override { STRATA_CUDA_CHECK(cudaStreamWaitEvent(compute_stream(), done_, 0)); }
  bool test() override { return cudaEventQuery(done_) == cudaSuccess; }

 private:
  cudaEvent_t done_;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(std::unique_ptr<Communicator> control, double timeout_s)
      : control_(std::move(control)), timeout_s_(timeout_s) {
    STRATA_CHECK(kernels::on_cuda(), "NCCL collectives need this rank's GPU current (kernels::use_device) first");
    STRATA_CUDA_CHECK(cudaGetDevice(&device_));
    ncclUniqueId id{};
    if (control_->rank() == 0) check_nccl(nccl_api().GetUniqueId(&id), "ncclGetUniqueId", "start-up");
    control_->broadcast(&id, sizeof id, 0, "NCCL unique id");
    check_nccl(nccl_api().CommInitRank(&comm_, control_->size(), id, control_->rank()), "ncclCommInitRank",
               "start-up");
    STRATA_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    STRATA_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    watchdog_ = std::thread([this] { watch(); });
  }

  ~NcclCommunicator() override {
    cudaStreamSynchronize(stream_);  // the watchdog still guards against a peer that never comes
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    watchdog_.join();
    for (const Pending& p : pending_) cudaEventDestroy(p.done);
    for (cudaEvent_t e : free_events_) cudaEventDestroy(e);
    nccl_api().CommDestroy(comm_);
    cudaEventDestroy(ready_);
    cudaStreamDestroy(stream_);
  }

  int rank() const override { return control_->rank(); }
  int size() const override { return control_->size(); }

  void all_reduce_sum(float* data, size_t n, const char* what) override {
    if (!on_device(data)) return control_->all_reduce_sum(data, n, what);
    queue(what, "all_reduce", n, [&](cudaStream_t s) {
      return nccl_api().AllReduce(data, data, n, ncclFloat32, ncclSum, comm_, s);
    });
  }
  void all_reduce_sum(double* data, size_t n, const char* what) override {
    if (!on_device(data)) return control_->all_reduce_sum(data, n, what);
    queue(what, "all_reduce", n, [&](cudaStream_t s) {
      return nccl_api().AllReduce(data, data, n, ncclFloat64, ncclSum, comm_, s);
    });
  }
  void all_reduce_max(float* data, size_t n, const char* what) override {
    if (!on_device(data)) return control_->all_reduce_max(data, n, what);
    queue(what, "all_reduce_max", n, [&](cudaStream_t s) {
      return nccl_api().AllReduce(data, data, n, ncclFloat32, ncclMax, comm_, s);
    });
  }
  void reduce_scatter_sum(const float* in, float* out, size_t n_per_rank, const char* what) override {
    if (!on_device(in)) return control_->reduce_scatter_sum(in, out, n_per_rank, what);
    queue(what, "reduce_scatter", n_per_rank, [&](cudaStream_t s) {
      return nccl_api().ReduceScatter(in, out, n_per_rank, ncclFloat32, ncclSum, comm_, s);
    });
  }
  void all_gather(const float* in, float* out, size_t n_per_rank, const char* what) override {
    if (!on_device(in)) return control_->all_gather(in, out, n_per_rank, what);
    queue(what, "all_gather", n_per_rank, [&](cudaStream_t s) {
      return nccl_api().AllGather(in, out, n_per_rank, ncclFloat32, comm_, s);
    });
  }
  void reduce_sum(float* data, size_t n, int root, const char* what) override {
    if (!on_device(data)) return control_->reduce_sum(data, n, root, what);
    check_peer(root, what);
    // In place: NCCL writes recvbuff on the root only, so the others keep their data.
    queue(what, "reduce", n, [&](cudaStream_t s) {
      return nccl_api().Reduce(data, data, n, ncclFloat32, ncclSum, root, comm_, s);
    });
  }
  void all_gather_v(float* data, const std::vector<size_t>& counts, const char* what) override {
    if (!on_device(data)) return control_->all_gather_v(data, counts, what);
    STRATA_CHECK(counts.size() == static_cast<size_t>(size()), "all_gather_v '", what, "': ", counts.size(),
                 " counts for ", size(), " ranks");
    size_t total = 0;
    for (size_t c : counts) total += c;
    // NCCL has no all-gather of unequal blocks: one broadcast per rank's block, as one group.
    queue(what, "all_gather_v", total, [&](cudaStream_t s) {
      ncclResult_t r = nccl_api().GroupStart();
      size_t offset = 0;
      for (int root = 0; root < size() && r == ncclSuccess; ++root) {
        float* block = data + offset;
        r = nccl_api().Broadcast(block, block, counts[root], ncclFloat32, root, comm_, s);
        offset += counts[root];
      }
      const ncclResult_t end = nccl_api().GroupEnd();
      return r != ncclSuccess ? r : end;
    });
  }
  std::vector<std::string> all_gather_bytes(const std::string& mine, const char* what) override {
    return control_->all_gather_bytes(mine, what);
  }
  void broadcast(void* data, size_t bytes, int root, const char* what) override {
    if (!on_device(data)) return control_->broadcast(data, bytes, root, what);
    check_peer(root, what);
    queue(what, "broadcast", bytes, [&](cudaStream_t s) {
      return nccl_api().Broadcast(data, data, bytes, ncclUint8, root, comm_, s);
    });
  }
  void send(const void* data, size_t bytes, int peer, int tag) override {
    if (!on_device(data)) return control_->send(data, bytes, peer, tag);
    check_peer(peer, "send");
    queue("send", "send", bytes, [&](cudaStream_t s) { return nccl_api().Send(data, bytes, ncclUint8, peer, comm_, s); });
  }
  void recv(void* data, size_t bytes, int peer, int tag) override {
    if (!on_device(data)) return control_->recv(data, bytes, peer, tag);
    check_peer(peer, "recv");
    queue("recv", "recv", bytes, [&](cudaStream_t s) { return nccl_api().Recv(data, bytes, ncclUint8, peer, comm_, s); });
  }
  // NCCL matches messages between two ranks in the order they were queued (no tags): the
  // pipeline schedule posts them in the same order on both sides, as it must for MPI too.
  std::unique_ptr<Request> isend(const void* data, size_t bytes, int peer, int tag) override {
    if (!on_device(data)) return control_->isend(data, bytes, peer, tag);
    check_peer(peer, "isend");
    return queue_request("isend", bytes, [&](cudaStream_t s) {
      return nccl_api().Send(data, bytes, ncclUint8, peer, comm_, s);
    });
  }
  std::unique_ptr<Request> irecv(void* data, size_t bytes, int peer, int tag) override {
    if (!on_device(data)) return control_->irecv(data, bytes, peer, tag);
    check_peer(peer, "irecv");
    return queue_request("irecv", bytes, [&](cudaStream_t s) {
      return nccl_api().Recv(data, bytes, ncclUint8, peer, comm_, s);
    });
  }
  void barrier(const char* what) override { control_->barrier(what); }
  void quiet_barrier(const char* what) override { control_->quiet_barrier(what); }
  std::unique_ptr<Communicator> split(int color, int key) override {
    return std::make_unique<NcclCommunicator>(control_->split(color, key), timeout_s_);
  }
  [[noreturn]] void abort(const std::string& why, int code) override {
    nccl_api().CommAbort(comm_);
    control_->abort(why, code);
    std::_Exit(code);  // control's abort does not return; this tells the compiler so
  }

 private:
  // A collective queued on stream_ and not yet seen complete.
  struct Pending {
    cudaEvent_t done;
    std::string description;  // "all_reduce 'gradient bucket 3' of 1048576 values"
    Clock::time_point queued;
  };

  void check_peer(int peer, const char* what) const {
    STRATA_CHECK(peer >= 0 && peer < size(), "'", what, "': rank ", peer, " is outside the group of ", size());
  }

  // Queues op on stream_ after the compute stream's work so far; the compute stream's later
  // work runs after it. Returns the event that marks its end (owned by the pending list).
  template <typename Op>
  cudaEvent_t enqueue(const std::string& description, Op op) {
    STRATA_CUDA_CHECK(cudaEventRecord(ready_, compute_stream()));
    STRATA_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0));
    check_nccl(op(stream_), "call", description);
    cudaEvent_t done = take_event();
    STRATA_CUDA_CHECK(cudaEventRecord(done, stream_));
    return done;
  }

  template <typename Op>
  void queue(const char* what, const char* kind, size_t count, Op op) {
    const std::string description = std::string(kind) + " '" + what + "' of " + std::to_string(count) + " values";
    cudaEvent_t done = enqueue(description, op);
    STRATA_CUDA_CHECK(cudaStreamWaitEvent(compute_stream(), done, 0));
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back({done, description, Clock::now()});
  }

  template <typename Op>
  std::unique_ptr<Request> queue_request(const char* kind, size_t bytes, Op op) {
    const std::string description = std::string(kind) + " of " + std::to_string(bytes) + " bytes";
    cudaEvent_t done = enqueue(description, op);
    // The request owns an event of its own (the caller may keep it past the watchdog's view).
    cudaEvent_t mine;
    STRATA_CUDA_CHECK(cudaEventCreateWithFlags(&mine, cudaEventDisableTiming));
    STRATA_CUDA_CHECK(cudaEventRecord(mine, stream_));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pending_.push_back({done, description, Clock::now()});
    }
    return std::make_unique<NcclRequest>(mine);
  }

  cudaEvent_t take_event() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_events_.empty()) {
      cudaEvent_t e = free_events_.back();
      free_events_.pop_back();
      return e;
    }
    cudaEvent_t e;
    STRATA_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
  }

  // The watchdog thread: retires finished collectives (in queue order, as the stream runs
  // them), and stops the job on an asynchronous NCCL error or a collective past the timeout.
  void watch() {
    cudaSetDevice(device_);  // event queries are made on this thread
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      wake_.wait_for(lock, std::chrono::milliseconds(50));
      while (!pending_.empty() && cudaEventQuery(pending_.front().done) == cudaSuccess) {
        free_events_.push_back(pending_.front().done);
        pending_.pop_front();
      }
      ncclResult_t async = ncclSuccess;
      nccl_api().CommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        const std::string what = pending_.empty() ? std::string("a collective") : pending_.front().description;
        stop_job(cat("strata: rank ", rank(), ": NCCL reported an error during ", what, ": ",
                     nccl_api().GetErrorString(async)));
      }
      if (pending_.empty()) continue;
      const double waited = std::chrono::duration<double>(Clock::now() - pending_.front().queued).count();
      if (waited > timeout_s_)
        stop_job(cat("strata: rank ", rank(), ": NCCL ", pending_.front().description, " did not complete within ",
                     timeout_s_, " s (a rank that never reached it, died, or is stuck; ddp_timeout sets the limit)"));
    }
  }

  [[noreturn]] void stop_job(const std::string& why) { abort(why, 1); }

  std::unique_ptr<Communicator> control_;
  double timeout_s_;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;
  std::mutex mutex_;  // guards what follows: the caller's thread queues, the watchdog retires
  std::condition_variable wake_;
  std::deque<Pending> pending_;
  std::vector<cudaEvent_t> free_events_;
  bool stopping_ = false;
  std::thread watchdog_;
};

}  // namespace

std::string nccl_unavailable_reason() {
  if (kernels::cuda_device_count() == 0) return "no GPU: " + kernels::cuda_unavailable_reason();
  if (kernels::emulated::enabled()) return "the GPU is emulated (STRATA_EMULATED_GPU), so NCCL cannot reach it";
  try {
    nccl_api();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> control, double timeout_s) {
  STRATA_CHECK(timeout_s > 0, "the collective timeout (ddp_timeout) must be a positive number of seconds, got ",
               timeout_s);
  const std::string why = nccl_unavailable_reason();
  if (!why.empty()) fail("NCCL collectives: ", why);
  return std::make_unique<NcclCommunicator>(std::move(control), timeout_s);
}

}  // namespace strata::dist
