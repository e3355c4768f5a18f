#include "data/loader.h"

#include <algorithm>
#include <cassert>

#include "util/error.h"

namespace strata::data {

DataLoader::DataLoader(std::shared_ptr<const BatchMaker> maker, LoaderOptions opts)
    : maker_(std::move(maker)), opts_(opts) {
  if (opts_.batch_size == 0) fail("batch size: expected > 0");
  if (opts_.world_size == 0 || opts_.rank >= opts_.world_size)
    fail("data sharding: rank ", opts_.rank, " is not in [0, world_size ", opts_.world_size, ")");
  if (opts_.num_workers < 0) fail("dataloader_num_workers: expected >= 0, got ", opts_.num_workers);
  plan_.num_examples = maker_->size();
  plan_.batch_size = opts_.batch_size;
  plan_.world_size = opts_.world_size;
  plan_.rank = opts_.rank;
  plan_.drop_last = opts_.drop_last;
}

DataLoader::~DataLoader() { stop_workers(); }

std::vector<size_t> DataLoader::epoch_order(int64_t epoch) const {
  if (opts_.shuffle)
    return permutation(plan_.num_examples, opts_.seed, rng_stream(RngDomain::Shuffle, static_cast<uint64_t>(epoch)));
  std::vector<size_t> order(plan_.num_examples);
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  return order;
}

std::vector<size_t> DataLoader::batch_examples(int64_t epoch, size_t j) const {
  const std::vector<size_t> order = epoch_order(epoch);
  const auto [b, e] = plan_.range(j);
  return {order.begin() + static_cast<std::ptrdiff_t>(b), order.begin() + static_cast<std::ptrdiff_t>(e)};
}

Batch DataLoader::make(size_t j) const {
  const auto [b, e] = plan_.range(j);
  Batch out = maker_->make(std::span<const size_t>(order_.data() + b, e - b), static_cast<uint64_t>(epoch_));
  out.example_ids.assign(order_.begin() + static_cast<std::ptrdiff_t>(b), order_.begin() + static_cast<std::ptrdiff_t>(e));
  return out;
}

void DataLoader::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void DataLoader::start(int64_t epoch, size_t first_batch) {
  if (epoch < 0) fail("data loader: epoch ", epoch, " is negative");
  if (first_batch > num_batches())
    fail("data loader: cannot start at batch ", first_batch, " of an epoch of ", num_batches(),
         " batches (resuming with another dataset or batch size?)");
  stop_workers();
  if (!started_ || epoch != epoch_) order_ = epoch_order(epoch);  // resuming within an epoch keeps it
  started_ = true;
  epoch_ = epoch;
  next_claim_ = next_deliver_ = first_batch;
  stop_ = false;
  if (opts_.num_workers == 0) return;
  const size_t capacity = std::max<size_t>(1, opts_.prefetch_per_worker * static_cast<size_t>(opts_.num_workers));
  ring_.assign(capacity, Slot());
  for (int w = 0; w < opts_.num_workers; ++w) workers_.emplace_back([this] { work(); });
}

void DataLoader::work() {
  const size_t end = num_batches();
  for (;;) {
    size_t j;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || next_claim_ >= end || next_claim_ < next_deliver_ + ring_.size(); });
      if (stop_ || next_claim_ >= end) return;
      j = next_claim_++;
    }
    Slot slot;
    try {
      slot.batch = make(j);
    } catch (...) {
      slot.error = std::current_exception();
    }
    slot.ready = true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ring_[j % ring_.size()] = std::move(slot);
    }
    cv_.notify_all();
  }
}

bool DataLoader::next(Batch& out) {
  assert(started_ && "DataLoader::start() must come first");
  if (next_deliver_ >= num_batches()) return false;
  if (workers_.empty()) {
    out = make(next_deliver_++);
    return true;
  }
  Slot slot;
  {
    std::unique_lock<std::mutex> lock(mu_);
    Slot& s = ring_[next_deliver_ % ring_.size()];
    cv_.wait(lock, [&] { return s.ready; });
    slot = std::move(s);
    s = Slot();
    ++next_deliver_;
  }
  cv_.notify_all();
  if (slot.error) std::rethrow_exception(slot.error);
  out = std::move(slot.batch);
  return true;
}

}  // namespace strata::data
