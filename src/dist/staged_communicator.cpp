// The staged communicator (dist/staged_communicator.h): device buffers copied to host memory,
// through `inner`, and back.
#include "dist/staged_communicator.h"

#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "kernels/device.h"

namespace strata::dist {

namespace {

using kernels::Device;

bool on_device(const void* p) { return kernels::is_device_memory(p); }

void download(void* host, const void* device, size_t bytes) {
  kernels::copy_bytes(host, Device::cpu(), device, kernels::current_device(), bytes);
}

// Page-locked host memory (where there is a GPU) that grows to the largest message and stays.
// A copy from it to the device may still be running when upload() returns (pinned memory
// copies asynchronously), so the host gets it back only after that copy is done.
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() {
    uploaded_.synchronize();
    kernels::host_free_pinned(data_);
  }

  // `bytes` of it for the host to read and write.
  void* get(size_t bytes) {
    uploaded_.synchronize();
    if (bytes > capacity_) {
      kernels::host_free_pinned(data_);
      data_ = nullptr;
      data_ = kernels::host_alloc_pinned(bytes);
      capacity_ = bytes;
    }
    return data_;
  }
  // Copies `bytes` of it, from `from` (its start by default), to `device` (memory of the
  // current device).
  void upload(void* device, size_t bytes, const void* from = nullptr) {
    kernels::copy_bytes(device, kernels::current_device(), from ? from : data_, Device::cpu(), bytes);
    uploaded_.record(kernels::compute_stream());
  }

 private:
  void* data_ = nullptr;
  size_t capacity_ = 0;
  kernels::Event uploaded_;
};

// The host buffers of messages in flight, kept for the next ones: page-locked memory is slow
// to allocate (cudaHostAlloc takes about a millisecond), and pipeline stages send a message
// per micro-batch. Shared by a communicator and its requests, which may outlive it.
class BufferPool {
 public:
  std::unique_ptr<HostBuffer> take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return std::make_unique<HostBuffer>();
    std::unique_ptr<HostBuffer> b = std::move(free_.back());
    free_.pop_back();
    return b;
  }
  void give(std::unique_ptr<HostBuffer> b) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(b));
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<HostBuffer>> free_;
};

// A send already copied out, or a receive that lands in host memory first and reaches the
// device once complete. Holds its host buffer for the message's life, then gives it back.
class StagedRequest final : public Request {
 public:
  StagedRequest(std::shared_ptr<BufferPool> pool, std::unique_ptr<HostBuffer> host, std::unique_ptr<Request> inner,
                void* device_dst, size_t bytes)
      : pool_(std::move(pool)), host_(std::move(host)), inner_(std::move(inner)), device_dst_(device_dst),
        bytes_(bytes) {}
  // As every request: destroying one that has not completed waits for it (and a receive's data
  // still reaches the device).
  ~StagedRequest() override {
    if (!done_) finish();
    pool_->give(std::move(host_));
  }
  void wait() override {
    if (!done_) finish();
  }
  bool test() override { return done_ || inner_->test(); }

 private:
  void finish() {
    inner_->wait();
    if (device_dst_) host_->upload(device_dst_, bytes_);
    done_ = true;
  }

  std::shared_ptr<BufferPool> pool_;
  std::unique_ptr<HostBuffer> host_;
  std::unique_ptr<Request> inner_;
  void* device_dst_;  // null for a send
  size_t bytes_;
  bool done_ = false;
};

class StagedCommunicator final : public Communicator {
 public:
  explicit StagedCommunicator(std::unique_ptr<Communicator> inner) : inner_(std::move(inner)) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }

  void all_reduce_sum(float* data, size_t n, const char* what) override {
    in_place(data, n, [&](float* h) { inner_->all_reduce_sum(h, n, what); });
  }
  void all_reduce_sum(double* data, size_t n, const char* what) override {
    in_place(data, n, [&](double* h) { inner_->all_reduce_sum(h, n, what); });
  }
  void all_reduce_max(float* data, size_t n, const char* what) override {
    in_place(data, n, [&](float* h) { inner_->all_reduce_max(h, n, what); });
  }

  void reduce_scatter_sum(const float* in, float* out, size_t n_per_rank, const char* what) override {
    if (!on_device(in) && !on_device(out)) return inner_->reduce_scatter_sum(in, out, n_per_rank, what);
    const size_t n_in = n_per_rank * static_cast<size_t>(size());
    float* h = static_cast<float*>(host_.get((n_in + n_per_rank) * sizeof(float)));
    take(h, in, n_in);
    inner_->reduce_scatter_sum(h, h + n_in, n_per_rank, what);
    give(out, h + n_in, n_per_rank);
  }

  void all_gather(const float* in, float* out, size_t n_per_rank, const char* what) override {
    if (!on_device(in) && !on_device(out)) return inner_->all_gather(in, out, n_per_rank, what);
    const size_t n_out = n_per_rank * static_cast<size_t>(size());
    float* h = static_cast<float*>(host_.get(n_out * sizeof(float)));
    float* mine = h + static_cast<size_t>(rank()) * n_per_rank;
    take(mine, in, n_per_rank);
    inner_->all_gather(mine, h, n_per_rank, what);  // in place, as MPI_IN_PLACE
    give(out, h, n_out);
  }

  void reduce_sum(float* data, size_t n, int root, const char* what) override {
    if (!on_device(data)) return inner_->reduce_sum(data, n, root, what);
    float* h = static_cast<float*>(host_.get(n * sizeof(float)));
    download(h, data, n * sizeof(float));
    inner_->reduce_sum(h, n, root, what);
    if (rank() == root) host_.upload(data, n * sizeof(float));  // the others' data is left as it was
  }

  void all_gather_v(float* data, const std::vector<size_t>& counts, const char* what) override {
    if (!on_device(data)) return inner_->all_gather_v(data, counts, what);
    size_t total = 0;
    for (size_t c : counts) total += c;
    in_place(data, total, [&](float* h) { inner_->all_gather_v(h, counts, what); });
  }

  std::vector<std::string> all_gather_bytes(const std::string& mine, const char* what) override {
    return inner_->all_gather_bytes(mine, what);
  }

  void broadcast(void* data, size_t bytes, int root, const char* what) override {
    if (!on_device(data)) return inner_->broadcast(data, bytes, root, what);
    void* h = host_.get(bytes);
    if (rank() == root) download(h, data, bytes);
    inner_->broadcast(h, bytes, root, what);
    if (rank() != root) host_.upload(data, bytes);
  }

  void send(const void* data, size_t bytes, int peer, int tag) override {
    if (!on_device(data)) return inner_->send(data, bytes, peer, tag);
    void* h = host_.get(bytes);
    download(h, data, bytes);
    inner_->send(h, bytes, peer, tag);
  }
  void recv(void* data, size_t bytes, int peer, int tag) override {
    if (!on_device(data)) return inner_->recv(data, bytes, peer, tag);
    void* h = host_.get(bytes);
    inner_->recv(h, bytes, peer, tag);
    host_.upload(data, bytes);
  }

  // Messages in flight at once each hold a host buffer of the pool.
  std::unique_ptr<Request> isend(const void* data, size_t bytes, int peer, int tag) override {
    if (!on_device(data)) return inner_->isend(data, bytes, peer, tag);
    std::unique_ptr<HostBuffer> h = pool_->take();
    void* p = h->get(bytes);
    download(p, data, bytes);
    std::unique_ptr<Request> r = inner_->isend(p, bytes, peer, tag);
    return std::make_unique<StagedRequest>(pool_, std::move(h), std::move(r), nullptr, bytes);
  }
  std::unique_ptr<Request> irecv(void* data, size_t bytes, int peer, int tag) override {
    if (!on_device(data)) return inner_->irecv(data, bytes, peer, tag);
    std::unique_ptr<HostBuffer> h = pool_->take();
    std::unique_ptr<Request> r = inner_->irecv(h->get(bytes), bytes, peer, tag);
    return std::make_unique<StagedRequest>(pool_, std::move(h), std::move(r), data, bytes);
  }

  void barrier(const char* what) override { inner_->barrier(what); }
  void quiet_barrier(const char* what) override { inner_->quiet_barrier(what); }
  std::unique_ptr<Communicator> split(int color, int key) override {
    return std::make_unique<StagedCommunicator>(inner_->split(color, key));
  }
  [[noreturn]] void abort(const std::string& why, int code) override { inner_->abort(why, code); }

 private:
  // Runs `call` on a host copy of data[0, n) when data is on the device, then copies it back.
  template <typename T, typename Call>
  void in_place(T* data, size_t n, Call call) {
    if (!on_device(data)) return call(data);
    T* h = static_cast<T*>(host_.get(n * sizeof(T)));
    download(h, data, n * sizeof(T));
    call(h);
    host_.upload(data, n * sizeof(T));
  }
  // host <- src (device or host); dst (device or host) <- host, a part of host_.
  static void take(float* host, const float* src, size_t n) {
    if (on_device(src)) return download(host, src, n * sizeof(float));
    std::memcpy(host, src, n * sizeof(float));
  }
  void give(float* dst, const float* host, size_t n) {
    if (on_device(dst)) return host_.upload(dst, n * sizeof(float), host);
    std::memcpy(dst, host, n * sizeof(float));
  }

  std::unique_ptr<Communicator> inner_;
  HostBuffer host_;  // one collective at a time per communicator (the interface's rule)
  std::shared_ptr<BufferPool> pool_ = std::make_shared<BufferPool>();  // messages in flight
};

}  // namespace

std::unique_ptr<Communicator> make_staged_communicator(std::unique_ptr<Communicator> inner) {
  return std::make_unique<StagedCommunicator>(std::move(inner));
}

}  // namespace strata::dist
