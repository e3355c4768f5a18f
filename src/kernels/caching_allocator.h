// A caching allocator in the manner of PyTorch's CUDA allocator, over any system allocator:
// freed blocks stay with the process, keyed by their rounded size, and the next request of
// that size takes one back instead of calling the system. cudaMalloc and cudaFree
// synchronise the device and cost tens of microseconds to milliseconds; a training step frees
// and asks for the same sizes every step, so after the first step it reaches the system no
// more. The GPU backend runs one over cudaMalloc; tests run one over the host heap.
//
// Sizes are rounded up to 512 bytes (up to 1 MiB) or to 2 MiB (above), and a cached block is
// reused for a request of the same rounded size only (no splitting: simple, and a step's
// sizes repeat exactly). When the system refuses, the cache is emptied and the request tried
// once more. Thread-safe.
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>

#include "kernels/device.h"

namespace strata::kernels {

class CachingAllocator {
 public:
  struct System {
    std::function<void*(size_t bytes)> alloc;  // returns null when out of memory
    std::function<void(void* p, size_t bytes)> free;  // bytes: what alloc was asked for p
  };
  explicit CachingAllocator(System system);
  ~CachingAllocator();  // returns every block, cached or not, to the system
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Null when the system has no room even after the cache is emptied. A request of 0 bytes
  // gets a block of the smallest size.
  void* allocate(size_t bytes);
  void deallocate(void* p);  // p from allocate(), not yet deallocated
  void empty_cache();
  // Memory the device gave the process outside this allocator (reserved memory, backed chunk
  // by chunk: kernels/reserved_memory.h), counted in the same statistics as in use and
  // reserved: positive when backed, negative when given back.
  void note_external(std::ptrdiff_t bytes);

  MemoryStats stats() const;
  void reset_peak();

  static size_t round_size(size_t bytes);

 private:
  System system_;
  mutable std::mutex mu_;
  std::multimap<size_t, void*> cached_;          // rounded size -> free block
  std::unordered_map<void*, size_t> in_use_;     // block -> rounded size
  MemoryStats stats_;
  void release_cached_locked();
};

}  // namespace strata::kernels
