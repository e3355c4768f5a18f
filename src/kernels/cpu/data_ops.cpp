// Data movement on the CPU (and the half storage of product inputs): plain loops. Large fills
// and copies split into fixed blocks over the OpenMP threads (memory bandwidth grows with
// cores); row moves split over rows, each row written by one thread.
#include <algorithm>

#include "kernels/cpu/common.h"
#include "kernels/cpu/cpu_ops.h"
#include "tensor/dtype.h"
#include "util/error.h"

namespace strata::kernels::cpu {

namespace {
// Below this many elements a parallel region costs more than the copy it would share.
constexpr size_t kParallelMin = size_t{1} << 15;

// fn(begin, end) over [0, n): in one piece when small, else in parallel_blocks' blocks.
template <typename Fn>
void element_blocks(size_t n, Fn fn) {
  if (n < kParallelMin)
    fn(size_t{0}, n);
  else
    parallel_blocks(n, fn);
}
}  // namespace

template <typename T>
void fill(T* x, size_t n, T value) {
  element_blocks(n, [&](size_t b, size_t e) { std::fill(x + b, x + e, value); });
}

template <typename T>
void copy(const T* src, T* dst, size_t n) {
  element_blocks(n, [&](size_t b, size_t e) { std::copy(src + b, src + e, dst + b); });
}

template <typename T>
void copy_rows(const T* src, size_t ld_src, T* dst, size_t ld_dst, size_t rows, size_t cols) {
  const auto rows_signed = static_cast<std::ptrdiff_t>(rows);
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelMin)
  for (std::ptrdiff_t r = 0; r < rows_signed; ++r)
    std::copy_n(src + static_cast<size_t>(r) * ld_src, cols, dst + static_cast<size_t>(r) * ld_dst);
}

template <typename T>
void gather_rows(const T* src, const int32_t* index, T* dst, int rows, int cols) {
#pragma omp parallel for schedule(static) if (static_cast<size_t>(rows) * cols >= kParallelMin)
  for (int i = 0; i < rows; ++i)
    if (index[i] >= 0)
      std::copy_n(src + static_cast<size_t>(index[i]) * cols, cols, dst + static_cast<size_t>(i) * cols);
}

template <typename T>
void scatter_rows(const T* src, const int32_t* index, T* dst, int rows, int cols) {
#pragma omp parallel for schedule(static) if (static_cast<size_t>(rows) * cols >= kParallelMin)
  for (int i = 0; i < rows; ++i)
    if (index[i] >= 0)
      std::copy_n(src + static_cast<size_t>(i) * cols, cols, dst + static_cast<size_t>(index[i]) * cols);
}

template <typename T>
void argmax_rows(const T* x, int rows, int cols, int32_t* out) {
#pragma omp parallel for schedule(static) if (static_cast<size_t>(rows) * cols >= kParallelMin)
  for (int r = 0; r < rows; ++r) {
    const T* row = x + static_cast<size_t>(r) * cols;
    out[r] = static_cast<int32_t>(std::max_element(row, row + cols) - row);
  }
}

void slice_ids(const int32_t* ids, int n, int first, int rows, int skip_id, int32_t* out) {
  for (int i = 0; i < n; ++i) {
    const int32_t r = ids[i] - first;
    out[i] = ids[i] != skip_id && r >= 0 && r < rows ? r : -1;
  }
}

// float_to_bf16 and bf16_to_float are branch-free: the compiler vectorises both loops.
void to_half(MatmulPrecision p, const float* x, uint16_t* y, size_t n) {
  STRATA_CHECK(p != MatmulPrecision::Fp32, "kernels::to_half: fp32 has no half storage");
  element_blocks(n, [&](size_t b, size_t e) {
    if (p == MatmulPrecision::Bf16)
      for (size_t i = b; i < e; ++i) y[i] = float_to_bf16(x[i]);
    else
      for (size_t i = b; i < e; ++i) y[i] = float_to_half(x[i]);
  });
}

void from_half(MatmulPrecision p, const uint16_t* x, float* y, size_t n) {
  STRATA_CHECK(p != MatmulPrecision::Fp32, "kernels::from_half: fp32 has no half storage");
  element_blocks(n, [&](size_t b, size_t e) {
    if (p == MatmulPrecision::Bf16)
      for (size_t i = b; i < e; ++i) y[i] = bf16_to_float(x[i]);
    else
      for (size_t i = b; i < e; ++i) y[i] = half_to_float(x[i]);
  });
}

template <typename From, typename To>
void cast(const From* src, To* dst, size_t n) {
  element_blocks(n, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) dst[i] = static_cast<To>(src[i]);
  });
}

#define STRATA_INSTANTIATE(T)                                                               \
  template void fill<T>(T*, size_t, T);                                                     \
  template void copy<T>(const T*, T*, size_t);                                              \
  template void copy_rows<T>(const T*, size_t, T*, size_t, size_t, size_t);                 \
  template void gather_rows<T>(const T*, const int32_t*, T*, int, int);                     \
  template void scatter_rows<T>(const T*, const int32_t*, T*, int, int);                    \
  template void argmax_rows<T>(const T*, int, int, int32_t*);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE
template void cast<float, double>(const float*, double*, size_t);
template void cast<double, float>(const double*, float*, size_t);

}  // namespace strata::kernels::cpu
