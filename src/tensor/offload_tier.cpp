// The two offload tiers (tensor/offload_tier.h).
#include "tensor/offload_tier.h"

#include <algorithm>
#include <utility>

#include "tensor/file_pool.h"
#include "util/serial_worker.h"

namespace strata {

namespace {

// CPU: a helper thread copies into the file-backed pool while the caller computes; waiting
// for a slot waits (on the host) for that thread to finish the slot's last job.
class FileTier final : public OffloadTier {
 public:
  explicit FileTier(const std::string& dir) : pool_(dir) {}

  void begin_pass() override {
    wait_all();
    pool_.clear();
  }
  std::byte* allocate(size_t bytes) override { return pool_.allocate(bytes); }
  void store(int slot, std::vector<Copy> copies) override {
    last_[slot] = worker_.submit([copies = std::move(copies)] {
      for (const Copy& c : copies) FileBackedPool::store(c.region, c.memory, c.bytes);
    });
  }
  void load(int slot, std::vector<Copy> copies) override {
    last_[slot] = worker_.submit([copies = std::move(copies)] {
      for (const Copy& c : copies) FileBackedPool::load(c.memory, c.region, c.bytes);
    });
  }
  void wait(int slot) override { worker_.wait(last_[slot]); }
  void wait_all() override { worker_.wait_all(); }
  size_t peak_bytes() const override { return pool_.peak_bytes(); }

 private:
  FileBackedPool pool_;
  SerialWorker::Ticket last_[2] = {0, 0};
  SerialWorker worker_;  // last: its jobs use the pool, so it stops first
};

// GPU: page-locked host memory in chunks that never move (a region stays valid while the pool
// grows), handed out in order and all freed by begin_pass(). Copies run on the copy stream,
// each batch after an event on the compute stream (the kernels that wrote or last read the
// slot), and each slot's last batch ends with an event the compute stream waits on.
class PinnedTier final : public OffloadTier {
 public:
  ~PinnedTier() override {
    kernels::synchronize();  // no copy may still use a chunk
    for (const Chunk& c : chunks_) kernels::host_free_pinned(c.data);
  }

  void begin_pass() override {
    wait_all();
    chunk_ = 0;
    offset_ = 0;
    used_ = 0;
  }

  std::byte* allocate(size_t bytes) override {
    const size_t need = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
    while (chunk_ < chunks_.size() && offset_ + need > chunks_[chunk_].bytes) {
      used_ += chunks_[chunk_].bytes - offset_;  // the tail left unused counts as held
      ++chunk_;
      offset_ = 0;
    }
    if (chunk_ == chunks_.size()) {
      const size_t bytes_new = std::max(need, std::max(kMinChunk, chunks_.empty() ? 0 : chunks_.back().bytes * 2));
      chunks_.push_back({static_cast<std::byte*>(kernels::host_alloc_pinned(bytes_new)), bytes_new});
    }
    std::byte* p = chunks_[chunk_].data + offset_;
    offset_ += need;
    used_ += need;
    peak_ = std::max(peak_, used_);
    return p;
  }

  void store(int slot, std::vector<Copy> copies) override { queue(slot, copies, true); }
  void load(int slot, std::vector<Copy> copies) override { queue(slot, copies, false); }
  void wait(int slot) override { done_[slot].wait(kernels::compute_stream()); }
  void wait_all() override {
    wait(0);
    wait(1);
  }
  size_t peak_bytes() const override { return peak_; }

 private:
  static constexpr size_t kAlign = 256;
  static constexpr size_t kMinChunk = size_t{64} << 20;
  struct Chunk {
    std::byte* data;
    size_t bytes;
  };

  void queue(int slot, const std::vector<Copy>& copies, bool out) {
    const kernels::Device gpu = kernels::current_device(), host = kernels::Device::cpu();
    const kernels::Stream copy = kernels::copy_stream();
    ready_.record(kernels::compute_stream());
    ready_.wait(copy);
    for (const Copy& c : copies) {
      if (out) kernels::copy_bytes_async(c.region, host, c.memory, gpu, c.bytes, copy);
      else kernels::copy_bytes_async(c.memory, gpu, c.region, host, c.bytes, copy);
    }
    done_[slot].record(copy);
  }

  std::vector<Chunk> chunks_;
  size_t chunk_ = 0, offset_ = 0, used_ = 0, peak_ = 0;
  kernels::Event ready_, done_[2];
};

}  // namespace

std::unique_ptr<OffloadTier> make_offload_tier(kernels::Device device, const std::string& dir) {
  if (device.is_cuda()) return std::make_unique<PinnedTier>();
  return std::make_unique<FileTier>(dir);
}

}  // namespace strata
