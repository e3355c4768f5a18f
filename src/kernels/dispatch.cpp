// The public ops of kernels/ops.h: each runs the current device's copy (kernels/device.h),
// the CPU's (kernels/cpu/cpu_ops.h) or the GPU's (kernels/cuda/cuda_ops.h). The branch is
// one relaxed load per op call, and the count of op_calls() a thread-local increment, against
// kernels that take microseconds at least.
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

thread_local uint64_t op_call_count = 0;
thread_local int op_depth = 0;

// Counts an op at its outermost call (op_calls()).
struct OpCall {
  OpCall() {
    if (op_depth++ == 0) ++op_call_count;
  }
  ~OpCall() { --op_depth; }
  OpCall(const OpCall&) = delete;
  OpCall& operator=(const OpCall&) = delete;
};

// Runs the current device's copy of an op. On the emulated GPU (kernels/emulated_gpu.h) an op
// checks that its pointers are device memory, then runs the CPU's copy with that memory opened
// to the host; an op that a CPU kernel calls inside it is the CPU's.
template <typename Cpu, typename Gpu, typename Check>
auto on_current_device(Cpu cpu_copy, Gpu gpu_copy, Check check_arguments) {
  const OpCall counted;
  if (!on_cuda()) return cpu_copy();
  if (!emulated::enabled()) return gpu_copy();
  if (emulated::inside_op()) return cpu_copy();
  check_arguments();
  const emulated::KernelScope open;
  return cpu_copy();
}
}  // namespace

#define STRATA_OP(ret, name, params, args)                                                                       \
  template <typename T>                                                                                          \
  ret name params {                                                                                              \
    if constexpr (std::is_same_v<T, float>) {                                                                    \
      return on_current_device([&] { return cpu::name<T> args; }, [&] { return cuda::name args; },               \
                               [&] { emulated::ArgumentCheck{#name} args; });                                    \
    } else {                                                                                                     \
      if (on_cuda()) fp64_on_gpu(#name);                                                                         \
      return cpu::name<T> args;                                                                                  \
    }                                                                                                            \
  }
#include "kernels/op_list.inc"
#undef STRATA_OP

uint64_t op_calls() { return op_call_count; }

size_t attention_saved_size(const AttentionShape& s) {
  return on_cuda() && !emulated::enabled() ? cuda::attention_saved_size(s) : cpu::attention_saved_size(s);
}

// Two element types, or none: not in the list.
template <typename From, typename To>
void cast(const From* src, To* dst, size_t n) {
  on_current_device([&] { cpu::cast(src, dst, n); }, [&] { cuda::cast(src, dst, n); },
                    [&] { emulated::ArgumentCheck{"cast"}(src, dst); });
}
template void cast<float, double>(const float*, double*, size_t);
template void cast<double, float>(const double*, float*, size_t);

void slice_ids(const int32_t* ids, int n, int first, int rows, int skip_id, int32_t* out) {
  on_current_device([&] { cpu::slice_ids(ids, n, first, rows, skip_id, out); },
                    [&] { cuda::slice_ids(ids, n, first, rows, skip_id, out); },
                    [&] { emulated::ArgumentCheck{"slice_ids"}(ids, out); });
}

void to_half(MatmulPrecision p, const float* x, uint16_t* y, size_t n) {
  on_current_device([&] { cpu::to_half(p, x, y, n); }, [&] { cuda::to_half(p, x, y, n); },
                    [&] { emulated::ArgumentCheck{"to_half"}(x, y); });
}
void from_half(MatmulPrecision p, const uint16_t* x, float* y, size_t n) {
  on_current_device([&] { cpu::from_half(p, x, y, n); }, [&] { cuda::from_half(p, x, y, n); },
                    [&] { emulated::ArgumentCheck{"from_half"}(x, y); });
}

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
