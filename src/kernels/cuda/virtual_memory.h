// The GPU's reserve-and-map memory (kernels/reserved_memory.h) over CUDA's virtual memory
// management, for kernels/cuda/device.cu.
#pragma once
#include <memory>

#include "kernels/caching_allocator.h"
#include "kernels/reserved_memory.h"

namespace strata::kernels::cuda {

// On GPU `device`, with `compute` (a cudaStream_t) the stream its zeroing is ordered on and
// `allocator` the statistics it counts into (and the cache it empties when the GPU is full).
std::unique_ptr<ReservedMemory> make_reserved_memory(int device, void* compute, CachingAllocator& allocator);

}  // namespace strata::kernels::cuda
