// What kernels/device.cpp asks of the GPU: implemented over the CUDA runtime in
// kernels/cuda/device.cpp, and by kernels/no_cuda.cpp in a build without CUDA (no GPU found;
// the rest is never reached, since use_device refuses a GPU that is not there). Handles are
// cudaStream_t / cudaEvent_t behind void*, so nothing outside kernels/cuda/ includes CUDA.
#pragma once
#include <cstddef>
#include <string>

#include "kernels/device.h"
#include "kernels/reserved_memory.h"

namespace strata::kernels::cuda {

int device_count();
std::string unavailable_reason();  // empty when device_count() > 0
void set_device(int index);        // also creates the process's streams on first use
DeviceProperties properties(int index);

void* alloc(size_t bytes);  // the caching allocator; null when the GPU is full
void free(void* p);
MemoryStats memory_stats();
void reset_peak();
void empty_cache();
// Memory reserved whole and backed chunk by chunk (kernels/cuda/virtual_memory.cu).
ReservedMemory& reserved_memory();
void* alloc_pinned(size_t bytes);
void free_pinned(void* p);

void* compute_stream();
void* copy_stream();
// Copies between host and the current device (or within either) on `stream`; with `wait`,
// returns after the data is there.
void copy(void* dst, bool dst_on_gpu, const void* src, bool src_on_gpu, size_t bytes, void* stream, bool wait);
void zero(void* p, size_t bytes, void* stream);
bool is_device_memory(const void* p);  // a GPU's (or managed) memory, not host or pinned

void* event_create();
void event_destroy(void* e);
void event_record(void* e, void* stream);
void event_wait(void* e, void* stream);
void event_synchronize(void* e);
bool event_done(void* e);
void synchronize();

}  // namespace strata::kernels::cuda
