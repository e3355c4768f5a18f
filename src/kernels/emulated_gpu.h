// A GPU emulated in host memory, for checking without a GPU that code which runs on one keeps
// its data where a GPU needs it. With STRATA_EMULATED_GPU=1 the process sees one GPU, cuda:0:
// its memory is an arena of host pages that the host may not touch (PROT_NONE), opened only
// while an op or a copy of the device seam runs; its ops are the CPU's (so results equal the
// CPU's bit for bit) after a check that every pointer they are given lies in that arena.
// So a model that hands a kernel a host vector, or host code that reads or writes a tensor
// on the device instead of copying it (kernels::copy_bytes), fails here as it would on a GPU,
// but at the line that does it: an op names itself and the argument, a host access stops the
// process with the address and a backtrace. New memory is filled with 0xFF bytes (NaN as
// floats, -1 as integers), as cudaMalloc's is garbage, so a read of unwritten memory shows.
// Reserved memory (kernels/reserved_memory.h) is backed in chunks of the host's page size
// (a GPU's are 2 MiB: finer here, so that the small test models have whole chunks to leave
// unbacked), and a chunk not backed stays closed even while an op runs: an op that reads or
// writes outside what was backed stops the process, as a GPU would fault.
//
// What it does not check: the GPU kernels' own numerics (tests/gpu/test_backend_ops does, on a
// GPU) and stream order (everything here is synchronous).
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>

#include "kernels/device.h"
#include "kernels/reserved_memory.h"

namespace strata::kernels::emulated {

// STRATA_EMULATED_GPU=1 (read once). STRATA_EMULATED_GPU_MEMORY=<GiB> sizes its memory
// (default 8).
bool enabled();

// kernels/cuda/cuda_device.h's calls, over the arena (streams and events: none, all synchronous).
DeviceProperties properties();
void* alloc(size_t bytes);  // null when the arena is full
void free(void* p);
MemoryStats memory_stats();
void reset_peak();
void empty_cache();
// Refused (std::logic_error) when a pointer said to be on the GPU is not in the arena, or one
// said to be on the host is.
void copy(void* dst, bool dst_on_gpu, const void* src, bool src_on_gpu, size_t bytes);
void zero(void* p, size_t bytes);
ReservedMemory& reserved_memory();

bool in_device_memory(const void* p);

// True while an op runs on this thread (or on the OpenMP team of an op): a CPU kernel that
// calls another public op (attention's products call kernels::gemm on its own scratch) runs it
// as the CPU's, unchecked.
bool inside_op();

// Opens the arena to the host while it lives (nested and concurrent scopes count).
class KernelScope {
 public:
  KernelScope();
  ~KernelScope();
  KernelScope(const KernelScope&) = delete;
  KernelScope& operator=(const KernelScope&) = delete;
};

// Checks an op's arguments: every non-null pointer must point into device memory.
struct ArgumentCheck {
  const char* op;
  template <typename... A>
  void operator()(const A&... a) const {
    int index = 0;
    (one(a, index++), ...);
  }

 private:
  template <typename P>
  void one(P* p, int index) const {
    if (p && !in_device_memory(p)) refuse(index);
  }
  template <typename V>
  void one(const V&, int) const {}
  [[noreturn]] void refuse(int index) const;
};

}  // namespace strata::kernels::emulated
