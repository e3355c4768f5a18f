// The public ops of kernels/ops.h: each runs the current device's copy (kernels/device.h),
// the CPU's (kernels/cpu/cpu_ops.h) or the GPU's (kernels/cuda/cuda_ops.h). The branch is
// one relaxed load per op call, against kernels that take microseconds at least.
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/device.h"
#include "kernels/emulated_gpu.h"
#include "kernels/ops.h"

namespace strata::kernels {

namespace {
[[noreturn]] void fp64_on_gpu(const char* op) {
  throw std::logic_error(std::string("kernels::") + op +
                         "<double>: fp64 runs on the CPU only (gradient checks); use the CPU device");
}
}  // namespace

// On the emulated GPU (kernels/emulated_gpu.h) an op checks that its pointers are device
// memory, then runs the CPU's copy with that memory opened to the host; an op that a CPU kernel
// calls inside it is the CPU's.
#define STRATA_OP(ret, name, params, args)                           \
  template <typename T>                                              \
  ret name params {                                                  \
    if (on_cuda()) {                                                 \
      if constexpr (std::is_same_v<T, float>) {                      \
        if (!emulated::enabled()) return cuda::name args;            \
        if (emulated::inside_op()) return cpu::name<T> args;         \
        emulated::ArgumentCheck{#name} args;                         \
        const emulated::KernelScope open;                            \
        return cpu::name<T> args;                                    \
      }                                                              \
      fp64_on_gpu(#name);                                            \
    }                                                                \
    return cpu::name<T> args;                                        \
  }
#include "kernels/op_list.inc"
#undef STRATA_OP

size_t attention_saved_size(const AttentionShape& s) {
  return on_cuda() && !emulated::enabled() ? cuda::attention_saved_size(s) : cpu::attention_saved_size(s);
}

// Two element types, so not in the list.
template <typename From, typename To>
void cast(const From* src, To* dst, size_t n) {
  if (on_cuda()) {
    if (!emulated::enabled()) return cuda::cast(src, dst, n);
    if (emulated::inside_op()) return cpu::cast(src, dst, n);
    emulated::ArgumentCheck{"cast"}(src, dst);
    const emulated::KernelScope open;
    return cpu::cast(src, dst, n);
  }
  cpu::cast(src, dst, n);
}
template void cast<float, double>(const float*, double*, size_t);
template void cast<double, float>(const double*, float*, size_t);

// Explicit instantiations: the list's T spelled float, then double.
#define STRATA_OP(ret, name, params, args) template ret name<T> params;
#define T float
#include "kernels/op_list.inc"
#undef T
#define T double
#include "kernels/op_list.inc"
#undef T
#undef STRATA_OP

}  // namespace strata::kernels
