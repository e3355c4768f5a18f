// Address space reserved whole and backed by memory only where it is used: the flat parameter
// and gradient buffers span the whole model, but a pipeline stage uses its window of them
// (and the shared parameters it borrows), and a ZeRO-2 rank keeps its slice of the gradients.
// The CPU gets this from the OS: an anonymous page is backed when first touched and given
// back by madvise. A GPU cannot fault memory in, so it backs the range explicitly, chunk by
// chunk: CUDA's virtual memory management (cuMemAddressReserve, then cuMemCreate + cuMemMap
// per chunk; kernels/cuda/virtual_memory.cu), or the emulated GPU's arena. This class keeps
// the books over such a system: which chunks of which reservation are backed.
//
// The rules, as for the CPU's pages: backed memory reads as zero until written, released
// memory reads as zero again; unbacked memory must not be touched (a GPU faults, the
// emulated GPU stops with the address). The device seam's copies and fills back what they
// write (kernels/device.h); a kernel cannot, so whoever runs ops on reserved memory backs it
// first (back_memory).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

namespace strata::kernels {

class ReservedMemory {
 public:
  struct System {
    size_t granularity = 0;                              // bytes of a chunk, a power of two
    std::function<void*(size_t bytes)> reserve;          // aligned to granularity; null when none is left
    std::function<void(void* p, size_t bytes)> unreserve;
    std::function<bool(void* chunk)> map;                // backs one chunk; false when out of memory
    std::function<void(void* chunk)> unmap;              // gives one chunk's memory back
    std::function<void(void* p, size_t bytes)> zero;     // backed memory, in order with the compute stream
    std::function<void()> wait_idle;                     // before unmapping: nothing queued may still use it
    std::function<void(std::ptrdiff_t bytes)> account;   // backed bytes into the device's statistics
  };
  explicit ReservedMemory(System system);
  ~ReservedMemory();  // frees every reservation still held
  ReservedMemory(const ReservedMemory&) = delete;
  ReservedMemory& operator=(const ReservedMemory&) = delete;

  // Address space for `bytes`, rounded up to whole chunks, nothing backed. Null when the
  // system has no address space left.
  void* reserve(size_t bytes);
  // Gives back the reservation at p (as reserve returned it) and every chunk backed in it.
  void free(void* p);

  // Backs every chunk that [p, p + bytes) touches and is not backed yet, zeroed. Throws
  // std::bad_alloc (after a line on stderr with the sizes) when the device has no memory left.
  // p must lie in a reservation.
  void back(void* p, size_t bytes);
  // Zeroes [p, p + bytes) where it is backed and gives back the chunks wholly inside it (the
  // partial chunks at either end hold other values too: zeroed only).
  void release(void* p, size_t bytes);
  // Bytes of the chunks that [p, p + bytes) touches that are backed (whole chunks, as mincore
  // counts whole pages).
  size_t backed_bytes(const void* p, size_t bytes) const;

  // Whether p lies in a reservation.
  bool contains(const void* p) const;
  size_t granularity() const { return system_.granularity; }
  size_t backed_total() const;

 private:
  struct Reservation {
    size_t bytes;
    std::vector<bool> backed;  // one per chunk
  };
  using Map = std::map<uintptr_t, Reservation>;
  // The reservation holding [p, p + bytes); throws std::logic_error naming `what` when p is
  // in none or the range runs past its end.
  Map::iterator find_locked(const void* p, size_t bytes, const char* what);
  Map::const_iterator find_locked(const void* p) const;
  void unmap_locked(uintptr_t base, Reservation& r, const std::vector<size_t>& chunks);

  System system_;
  mutable std::mutex mu_;
  Map reservations_;
  size_t backed_total_ = 0;
};

}  // namespace strata::kernels
