#include "kernels/caching_allocator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace strata::kernels {

namespace {
constexpr size_t kSmallGranule = 512;
constexpr size_t kLargeGranule = size_t{2} << 20;
constexpr size_t kSmallLimit = size_t{1} << 20;
}  // namespace

size_t CachingAllocator::round_size(size_t bytes) {
  const size_t g = bytes <= kSmallLimit ? kSmallGranule : kLargeGranule;
  return std::max<size_t>(1, (bytes + g - 1) / g) * g;
}

CachingAllocator::CachingAllocator(System system) : system_(std::move(system)) {}

CachingAllocator::~CachingAllocator() {
  release_cached_locked();
  for (const auto& [p, size] : in_use_) system_.free(p, size);
}

void* CachingAllocator::allocate(size_t bytes) {
  const size_t size = round_size(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.allocations;
  void* p = nullptr;
  if (auto it = cached_.find(size); it != cached_.end()) {
    p = it->second;
    cached_.erase(it);
  } else {
    p = system_.alloc(size);
    if (!p && !cached_.empty()) {  // the cache holds memory the system could give us
      release_cached_locked();
      p = system_.alloc(size);
    }
    if (!p) return nullptr;
    ++stats_.system_allocations;
    stats_.reserved += size;
  }
  in_use_.emplace(p, size);
  stats_.in_use += size;
  stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.in_use);
  return p;
}

void CachingAllocator::deallocate(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = in_use_.find(p);
  if (it == in_use_.end()) {  // a double free or a foreign pointer: memory is corrupt from here
    std::fprintf(stderr, "strata: CachingAllocator::deallocate(%p): not a block in use\n", p);
    std::abort();
  }
  stats_.in_use -= it->second;
  cached_.emplace(it->second, p);
  in_use_.erase(it);
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  release_cached_locked();
}

void CachingAllocator::release_cached_locked() {
  for (const auto& [size, p] : cached_) {
    system_.free(p, size);
    stats_.reserved -= size;
  }
  cached_.clear();
}

void CachingAllocator::note_external(std::ptrdiff_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.in_use += static_cast<size_t>(bytes);  // unsigned wrap-around: subtracts when negative
  stats_.reserved += static_cast<size_t>(bytes);
  stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.in_use);
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_in_use = stats_.in_use;
}

}  // namespace strata::kernels
