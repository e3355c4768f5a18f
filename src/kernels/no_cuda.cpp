// The GPU's side of the device seam in a build without CUDA (MLX's no_gpu): there is no GPU,
// and every op asked of one names itself. use_device refuses a GPU before anything here past
// device_count() could be reached, so the rest only guards against a bug in that check.
#ifndef STRATA_WITH_CUDA
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_device.h"
#include "kernels/cuda/cuda_ops.h"

namespace strata::kernels::cuda {

namespace {
[[noreturn]] void no_gpu(const char* what) {
  throw std::logic_error(std::string(what) + " has no GPU implementation in this build (built without CUDA)");
}
}  // namespace

int device_count() { return 0; }
std::string unavailable_reason() {
  return "this build of strata has no CUDA backend (no CUDA toolkit when it was configured, or STRATA_CUDA=OFF)";
}
void set_device(int) { no_gpu("set_device"); }
DeviceProperties properties(int) { no_gpu("device_properties"); }
void* alloc(size_t) { no_gpu("device_alloc"); }
void free(void*) { no_gpu("device_free"); }
MemoryStats memory_stats() { return {}; }
void reset_peak() {}
void empty_cache() {}
ReservedMemory& reserved_memory() { no_gpu("reserve_memory"); }
void* alloc_pinned(size_t) { no_gpu("host_alloc_pinned"); }
void free_pinned(void*) { no_gpu("host_free_pinned"); }
void* compute_stream() { no_gpu("compute_stream"); }
void* copy_stream() { no_gpu("copy_stream"); }
void copy(void*, bool, const void*, bool, size_t, void*, bool) { no_gpu("copy_bytes"); }
void zero(void*, size_t, void*) { no_gpu("zero_bytes"); }
bool is_device_memory(const void*) { return false; }
void* event_create() { no_gpu("Event"); }
void event_destroy(void*) { no_gpu("Event"); }
void event_record(void*, void*) { no_gpu("Event::record"); }
void event_wait(void*, void*) { no_gpu("Event::wait"); }
void event_synchronize(void*) { no_gpu("Event::synchronize"); }
bool event_done(void*) { no_gpu("Event::done"); }
void synchronize() { no_gpu("synchronize"); }

#define STRATA_OP(ret, name, params, args) \
  ret name params { no_gpu("kernels::" #name); }
#include "kernels/op_list.inc"
#undef STRATA_OP
size_t attention_saved_size(const AttentionShape&) { no_gpu("kernels::attention_saved_size"); }
void cast(const float*, double*, size_t) { no_gpu("kernels::cast"); }
void cast(const double*, float*, size_t) { no_gpu("kernels::cast"); }
void slice_ids(const int32_t*, int, int, int, int, int32_t*) { no_gpu("kernels::slice_ids"); }
void to_half(MatmulPrecision, const float*, uint16_t*, size_t) { no_gpu("kernels::to_half"); }
void from_half(MatmulPrecision, const uint16_t*, float*, size_t) { no_gpu("kernels::from_half"); }

}  // namespace strata::kernels::cuda
#endif
