// What a model state keeps for its transformer blocks between forward and backward, under an
// ActivationPolicy: one generic mechanism for every architecture, over any range of blocks.
//
// Each block i has a *record*: its input (the previous block's output; the first block of the
// range reads the caller's buffer) and its Saved (what its backward reads besides the input).
// The block's output goes straight into the next record's input, so dropping or moving a
// record never loses a boundary:
//   - kept:         the record stays in memory (records_[i]);
//   - checkpointed: forward runs in a workspace whose saved state is overwritten by the next
//                   checkpointed block, and only the input is kept; backward first reruns the
//                   forward from that input (same dropout masks) in the workspace;
//   - offloaded:    records live in a ring of two slots; after block i's forward record i is
//                   copied out (tensor/offload_tier.h: by a helper thread to a file-backed
//                   pool on the CPU, by the copy stream to pinned memory on a GPU) and block
//                   i+2 reuses the slot; in backward, block i's record is fetched back while
//                   block i+1's backward runs. The last two records of a range never leave
//                   the ring.
// Offloading a checkpointed block moves its input only.
//
// Under bf16 / fp16 products (ActivationPolicy::products) a record keeps the buffers that
// backward reads only as inputs of products (Saved::product_inputs(): q|k|v, the attention
// context, ...) in that type, half their bytes (kernels::to_half; two values to a T). The
// products round them to it anyway, so backward, which widens them back (exactly), reads the
// values it would have read: results are bit for bit the same. One full-width set of those
// buffers exists for all blocks: lent to the block whose forward or backward runs, kept by
// the range's last block (whose backward comes first), spare in between. So the blocks but
// the last save those values in half the memory, with no copy of a layer's worth more.
//
// Saved must have a Buffer<T> `out` (the block's output, unused by backward),
// `for_backward()`, the list of every other buffer, and `product_inputs()`, those of them
// that backward reads only as inputs of products.
#pragma once
#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/ops.h"
#include "nn/activation_policy.h"
#include "tensor/buffer.h"
#include "tensor/offload_tier.h"

namespace strata::nn {

template <typename T, typename Saved>
class BlockActivations {
 public:
  explicit BlockActivations(ActivationPolicy policy = {}) : policy_(std::move(policy)) {}

  // Forward over blocks [first, end): fn(i, x, saved) runs block i from its input x. Block
  // `first` reads `input`, which the caller keeps unchanged until that block's backward is
  // done. Returns the last block's output (`input` when the range has no block).
  template <typename Fn>
  const T* forward(int first, int end, const T* input, Fn&& fn) {
    if (first >= end) return input;
    begin_forward(first, end, input);
    for (int i = first; i < end; ++i) forward_block(i, fn);
    return out_.data();
  }

  const T* input(int i) const { return i == first_ ? first_input_ : record(i).input.data(); }

  // The saved state for block i's backward (blocks in reverse order): fetched from the pool
  // if offloaded, recomputed with fn(i, x, saved) (the forward's fn) if checkpointed. Valid
  // until the next call. Backward may overwrite what it has read (the blocks' MLP
  // pre-activation becomes its derivative): one backward per forward.
  template <typename Fn>
  Saved& for_backward(int i, Fn&& fn) {
    if (policy_.offload) {
      if (offloaded(i)) tier_->wait(slot(i));
      // Prefetch block i-1's record into the other slot (block i+1 is done with it) while
      // block i's backward runs.
      if (i - 1 >= first_ && offloaded(i - 1)) fetch(i - 1);
    }
    if (policy_.checkpointed(i)) {
      fn(i, input(i), work_);
      return work_;
    }
    Record& r = record(i);
    if (halved(i)) {  // the full set moves here from the block whose backward ran before
      reclaim_full_set();
      lend_full_set(r.saved);
      widen(r);
    }
    return r.saved;
  }

  // Inference runs blocks through these two in turn (j = 0, 1, 2, ...), chosen among what
  // training allocates: the recompute workspace if there is one, and record 1 (record 0 too
  // without checkpointing). It overwrites the records of a forward whose backward has not run.
  // A record whose product inputs are halved borrows the full set (the slot before it is done
  // with it: the block reads only that slot's output).
  Saved& inference_slot(int j) {
    reclaim_full_set();  // before records_ may move
    if (records_.size() < 2) records_.resize(2);
    Saved& s = j % 2 ? records_[1].saved : policy_.checkpoint_every > 0 ? work_ : records_[0].saved;
    if (half_ && &s != &work_) lend_full_set(s);  // the workspace has its own
    return s;
  }

  // The most the offload pool has held in one pass.
  size_t offload_pool_bytes() const { return tier_ ? tier_->peak_bytes() : 0; }
  // Values its buffers hold in memory (records, workspace, hand-off buffer and output): what
  // block_footprint counts, for the tests that hold the two to each other.
  size_t held_values() const {
    size_t n = handoff_.size() + out_.size();
    auto add = [&n](const Saved& s) {
      for (const Buffer<T>* b : const_cast<Saved&>(s).for_backward()) n += b->size();
      n += s.out.size();
    };
    for (const Record& r : records_) {
      n += r.input.size();
      add(r.saved);
      for (const Buffer<T>& h : r.halves) n += h.size();
    }
    for (const Buffer<T>& b : spare_) n += b.size();
    add(work_);
    return n;
  }

 private:
  struct Record {
    Buffer<T> input;
    Saved saved;
    // Under half products: saved.product_inputs() in 16 bits, and how many values each has.
    std::vector<Buffer<T>> halves;
    std::vector<size_t> counts;
  };
  struct Region {  // one record in the pool: per buffer of record_buffers(), its place and size
    std::vector<std::byte*> at;
    std::vector<size_t> sizes;
  };

  void begin_forward(int first, int end, const T* input) {
    if (tier_) tier_->begin_pass();  // after the copies of an earlier pass that never ran backward
    // Only while the products round to the type the records keep (a pipeline's evaluation
    // may run in another precision than training: it keeps them whole).
    half_ = std::is_same_v<T, float> && policy_.halves_product_inputs() &&
            kernels::matmul_precision() == policy_.products;
    reclaim_full_set();  // before records_ may move
    first_ = first;
    end_ = end;
    first_input_ = input;
    records_.resize(static_cast<size_t>(std::max(2, policy_.offload ? 2 : end - first)));
    if (!policy_.offload) return;
    if (!tier_) {
      tier_ = make_offload_tier(kernels::current_device(), policy_.offload_dir);
      tier_->begin_pass();
    }
    regions_.assign(static_cast<size_t>(end - first), Region{});
  }

  // Block i's forward, keeping what the policy keeps.
  template <typename Fn>
  void forward_block(int i, Fn& fn) {
    Saved& t = target(i);
    if (half_ && !policy_.checkpointed(i)) lend_full_set(t);  // the last block keeps it
    // The hand-off buffer is lent as the block's output, so the output is written in place
    // and then handed to the next record (or kept as the range's output) without a copy.
    std::swap(t.out, handoff_);
    fn(i, input(i), t);
    std::swap(t.out, handoff_);
    if (halved(i)) {
      halve(record(i));
      reclaim_full_set();
    }
    if (i + 1 < end_) {
      if (policy_.offload) tier_->wait(slot(i + 1));  // the slot's last record is in the pool
      std::swap(record(i + 1).input, handoff_);
    } else {
      std::swap(out_, handoff_);
      // handoff_ is now the last forward's output buffer, which the next forward lends to its
      // first block: sized here, in the first step, so later steps allocate nothing.
      handoff_.resize(out_.size());
    }
    if (offloaded(i)) copy_out(i);
  }

  bool offloaded(int i) const { return policy_.offload && i + 2 < end_; }
  bool halved(int i) const { return half_ && !policy_.checkpointed(i) && i + 1 < end_; }
  size_t slot(int i) const { return static_cast<size_t>(i - first_) % 2; }
  Record& record(int i) { return records_[policy_.offload ? slot(i) : static_cast<size_t>(i - first_)]; }
  const Record& record(int i) const { return const_cast<BlockActivations*>(this)->record(i); }
  Saved& target(int i) { return policy_.checkpointed(i) ? work_ : record(i).saved; }

  // What record i holds: its input unless it is the range's first, and its saved state
  // unless it is recomputed (its product inputs as halves if halved).
  std::vector<Buffer<T>*> record_buffers(int i) {
    std::vector<Buffer<T>*> bufs;
    Record& r = record(i);
    if (i > first_) bufs.push_back(&r.input);
    if (policy_.checkpointed(i)) return bufs;
    const auto products = r.saved.product_inputs();
    for (Buffer<T>* b : r.saved.for_backward())
      if (!halved(i) || std::find(products.begin(), products.end(), b) == products.end()) bufs.push_back(b);
    if (halved(i))
      for (Buffer<T>& h : r.halves) bufs.push_back(&h);
    return bufs;
  }

  // ---- half product inputs -----------------------------------------------------------
  static uint16_t* as_halves(Buffer<T>& b) { return reinterpret_cast<uint16_t*>(b.data()); }

  // A record's product inputs become the full set (a record that has storage of its own, as
  // one an inference pass wrote into before training halved anything, keeps that, which
  // reclaim_full_set then frees).
  void lend_full_set(Saved& s) {
    const auto products = s.product_inputs();
    if (spare_.size() < products.size()) spare_.resize(products.size());
    for (size_t k = 0; k < products.size(); ++k)
      if (products[k]->data() == nullptr) std::swap(*products[k], spare_[k]);
    holder_ = &s;
  }
  // The set back to spare from the record it was lent to (if any); a second full-width buffer
  // is freed.
  void reclaim_full_set() {
    if (!holder_) return;
    const auto products = holder_->product_inputs();
    for (size_t k = 0; k < products.size(); ++k) {
      if (spare_[k].data() == nullptr) std::swap(*products[k], spare_[k]);
      else *products[k] = Buffer<T>(0, products[k]->device());
    }
    holder_ = nullptr;
  }
  void halve(Record& r) {
    const auto products = r.saved.product_inputs();
    r.halves.resize(products.size());
    r.counts.resize(products.size());
    for (size_t k = 0; k < products.size(); ++k) {
      r.counts[k] = products[k]->size();
      resize_on_current_device(r.halves[k], (r.counts[k] + 1) / 2);
      if constexpr (std::is_same_v<T, float>)
        kernels::to_half(policy_.products, products[k]->data(), as_halves(r.halves[k]), r.counts[k]);
    }
  }
  void widen(Record& r) {
    const auto products = r.saved.product_inputs();
    for (size_t k = 0; k < products.size(); ++k) {
      products[k]->resize(r.counts[k]);
      if constexpr (std::is_same_v<T, float>)
        kernels::from_half(policy_.products, as_halves(r.halves[k]), products[k]->data(), r.counts[k]);
    }
  }

  void copy_out(int i) {
    Region& r = regions_[static_cast<size_t>(i - first_)];
    r.at.clear();
    r.sizes.clear();
    std::vector<OffloadTier::Copy> copies;
    for (Buffer<T>* b : record_buffers(i)) {  // each region page-aligned: the file pool drops whole pages
      r.at.push_back(tier_->allocate(b->size() * sizeof(T)));
      r.sizes.push_back(b->size());
      copies.push_back({r.at.back(), b->data(), b->size() * sizeof(T)});
    }
    tier_->store(static_cast<int>(slot(i)), std::move(copies));
  }

  void fetch(int i) {
    const Region& r = regions_[static_cast<size_t>(i - first_)];
    const std::vector<Buffer<T>*> bufs = record_buffers(i);
    std::vector<OffloadTier::Copy> copies;
    for (size_t k = 0; k < bufs.size(); ++k) {
      bufs[k]->resize(r.sizes[k]);
      copies.push_back({r.at[k], bufs[k]->data(), r.sizes[k] * sizeof(T)});
    }
    tier_->load(static_cast<int>(slot(i)), std::move(copies));
  }

  ActivationPolicy policy_;
  int first_ = 0, end_ = 0;
  const T* first_input_ = nullptr;
  std::vector<Record> records_;  // per block of the range; with offloading, the ring of two
  Saved work_;                   // checkpointed blocks run here
  Buffer<T> handoff_, out_;
  // half product inputs
  bool half_ = false;
  std::vector<Buffer<T>> spare_;  // the full set while no record holds it
  Saved* holder_ = nullptr;       // the record holding it (null: spare_ does)
  // offloading
  std::vector<Region> regions_;  // per block of the range
  std::unique_ptr<OffloadTier> tier_;  // last: its copies use the buffers above, so it stops first
};

}  // namespace strata::nn
