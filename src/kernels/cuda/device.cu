// The GPU's side of the device seam (kernels/cuda/cuda_device.h) over the CUDA runtime: one
// compute stream and one copy stream per process (non-blocking, so nothing waits on the
// legacy default stream), a caching allocator over cudaMalloc, and reserve-and-map memory
// (kernels/cuda/virtual_memory.cu) counted in the allocator's statistics.
#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "kernels/caching_allocator.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_device.h"
#include "kernels/cuda/virtual_memory.h"

namespace strata::kernels::cuda {

namespace {

struct State {
  int index = -1;
  cudaStream_t compute = nullptr, copy = nullptr;
  std::unique_ptr<CachingAllocator> allocator;
  // Kept to the process's end: the driver frees what it holds at exit,
  // after which unmapping would fail.
  ReservedMemory* reserved = nullptr;
};
State g_state;
std::once_flag g_count_once;
int g_count = 0;
cudaError_t g_count_error = cudaSuccess;

void count_devices() {
  g_count_error = cudaGetDeviceCount(&g_count);
  if (g_count_error != cudaSuccess) {
    g_count = 0;
    cudaGetLastError();  // clear it: a machine without a driver is not an error state for later calls
  }
}

State& state() {
  if (g_state.index < 0) throw std::logic_error("kernels::cuda: no GPU made current (use_device)");
  return g_state;
}

}  // namespace

int device_count() {
  std::call_once(g_count_once, count_devices);
  return g_count;
}

std::string unavailable_reason() {
  if (device_count() > 0) return "";
  if (g_count_error == cudaSuccess) return "no CUDA-capable device is present";
  return std::string("the CUDA runtime found no usable GPU: ") + cudaGetErrorName(g_count_error) + " (" +
         cudaGetErrorString(g_count_error) + ")";
}

void set_device(int index) {
  STRATA_CUDA_CHECK(cudaSetDevice(index));
  if (g_state.index == index) return;
  if (g_state.index >= 0) throw std::logic_error("kernels::cuda: one GPU per process; this one uses cuda:" +
                                                 std::to_string(g_state.index));
  g_state.index = index;
  STRATA_CUDA_CHECK(cudaStreamCreateWithFlags(&g_state.compute, cudaStreamNonBlocking));
  STRATA_CUDA_CHECK(cudaStreamCreateWithFlags(&g_state.copy, cudaStreamNonBlocking));
  g_state.allocator = std::make_unique<CachingAllocator>(CachingAllocator::System{
      [](size_t bytes) -> void* {
        void* p = nullptr;
        if (cudaMalloc(&p, bytes) != cudaSuccess) {
          cudaGetLastError();  // out of memory is reported by returning null, not left pending
          return nullptr;
        }
        return p;
      },
      [](void* p, size_t) { cudaFree(p); }});
  g_state.reserved = make_reserved_memory(index, g_state.compute, *g_state.allocator).release();
}

DeviceProperties properties(int index) {
  cudaDeviceProp prop{};
  STRATA_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  DeviceProperties p;
  p.name = prop.name;
  p.total_memory = prop.totalGlobalMem;
  p.compute_major = prop.major;
  p.compute_minor = prop.minor;
  p.multiprocessors = prop.multiProcessorCount;
  STRATA_CUDA_CHECK(cudaDriverGetVersion(&p.driver_version));
  STRATA_CUDA_CHECK(cudaRuntimeGetVersion(&p.runtime_version));
  int current = 0;
  STRATA_CUDA_CHECK(cudaGetDevice(&current));
  if (current == index) {
    size_t free_bytes = 0, total = 0;
    STRATA_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
    p.free_memory = free_bytes;
  }
  return p;
}

void* alloc(size_t bytes) { return state().allocator->allocate(bytes); }
void free(void* p) {
  // Blocks are freed for reuse while kernels queued on the compute stream may still read
  // them; that is safe because every op runs on that one stream, in order (PyTorch's rule).
  state().allocator->deallocate(p);
}
ReservedMemory& reserved_memory() { return *state().reserved; }
MemoryStats memory_stats() { return g_state.allocator ? g_state.allocator->stats() : MemoryStats{}; }
void reset_peak() {
  if (g_state.allocator) g_state.allocator->reset_peak();
}
void empty_cache() {
  if (!g_state.allocator) return;
  STRATA_CUDA_CHECK(cudaDeviceSynchronize());
  g_state.allocator->empty_cache();
}

void* alloc_pinned(size_t bytes) {
  void* p = nullptr;
  STRATA_CUDA_CHECK(cudaMallocHost(&p, bytes));
  return p;
}
void free_pinned(void* p) { STRATA_CUDA_CHECK(cudaFreeHost(p)); }

void* compute_stream() { return state().compute; }
void* copy_stream() { return state().copy; }

void copy(void* dst, bool dst_on_gpu, const void* src, bool src_on_gpu, size_t bytes, void* stream, bool wait) {
  const cudaMemcpyKind kind = dst_on_gpu ? (src_on_gpu ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                                         : (src_on_gpu ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  const auto s = static_cast<cudaStream_t>(stream);
  STRATA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, s));
  if (wait) STRATA_CUDA_CHECK(cudaStreamSynchronize(s));
}

void zero(void* p, size_t bytes, void* stream) {
  STRATA_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, static_cast<cudaStream_t>(stream)));
}

bool is_device_memory(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();  // older runtimes flag plain host memory as an error; clear it
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

void* event_create() {
  cudaEvent_t e = nullptr;
  STRATA_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}
void event_destroy(void* e) { cudaEventDestroy(static_cast<cudaEvent_t>(e)); }
void event_record(void* e, void* stream) {
  STRATA_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(e), static_cast<cudaStream_t>(stream)));
}
void event_wait(void* e, void* stream) {
  STRATA_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(e), 0));
}
void event_synchronize(void* e) { STRATA_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(e))); }
bool event_done(void* e) {
  const cudaError_t r = cudaEventQuery(static_cast<cudaEvent_t>(e));
  if (r == cudaErrorNotReady) return false;
  STRATA_CUDA_CHECK(r);
  return true;
}
void synchronize() { STRATA_CUDA_CHECK(cudaDeviceSynchronize()); }

}  // namespace strata::kernels::cuda
