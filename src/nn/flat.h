// Layers address their parameters as offsets into one flat parameter buffer and the
// matching flat gradient buffer (DESIGN.md principle 5). A layer "spec" is plain offsets
// and sizes; `Flat` carries the two base pointers.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/ops.h"
#include "nn/tensor_group.h"

namespace strata::nn {

template <typename T>
struct Flat {
  const T* p;  // parameters
  T* g;        // gradients (accumulated into)
  // The tensor-parallel group whose slices p and g hold (nn/tensor_group.h); null: unsplit.
  const TensorGroup<T>* tp = nullptr;
};

struct LinearSpec {
  static constexpr size_t kNoBias = ~size_t{0};
  size_t w, b;  // offsets of weight [out, in] and bias [out] (kNoBias: none)
  int in, out;
};

struct LayerNormSpec {
  size_t gamma, beta;
  int C;
  double eps;
};

// T5LayerNorm: an RMS norm, a gain and no bias.
struct RmsNormSpec {
  size_t gamma;
  int C;
  double eps;
};

// Where a layer's dropout masks come from: (seed, stream) -> mask, recomputed in backward.
// Inactive (eval, or p = 0 everywhere) makes every dropout the identity.
struct DropoutCtx {
  bool active;
  uint64_t seed;
  float p(float prob) const { return active ? prob : 0.0f; }
};

template <typename T>
inline void linear_forward(const LinearSpec& s, Flat<T> f, const T* x, T* y, int N) {
  kernels::linear_forward(x, f.p + s.w, s.b == LinearSpec::kNoBias ? nullptr : f.p + s.b, y, N, s.in, s.out);
}

template <typename T>
inline void linear_backward(const LinearSpec& s, Flat<T> f, const T* x, const T* dy, T* dx, int N) {
  kernels::linear_backward(x, f.p + s.w, dy, dx, f.g + s.w, s.b == LinearSpec::kNoBias ? nullptr : f.g + s.b, N, s.in,
                          s.out);
}

// HF's Conv1D (GPT-2): the same spec, but the weight at s.w is stored [in, out] (HF's
// layout, kept in the flat buffer so checkpoints stay a walk of the table).
template <typename T>
inline void conv1d_forward(const LinearSpec& s, Flat<T> f, const T* x, T* y, int N) {
  kernels::conv1d_forward(x, f.p + s.w, s.b == LinearSpec::kNoBias ? nullptr : f.p + s.b, y, N, s.in, s.out);
}

template <typename T>
inline void conv1d_backward(const LinearSpec& s, Flat<T> f, const T* x, const T* dy, T* dx, int N) {
  kernels::conv1d_backward(x, f.p + s.w, dy, dx, f.g + s.w, s.b == LinearSpec::kNoBias ? nullptr : f.g + s.b, N, s.in,
                           s.out);
}

// Row-parallel Conv1D (Megatron): the input is split along `in`, each rank holds those rows of
// W; the partial products are summed over the group (operator g) and the bias, which every
// rank holds whole, is added once: by rank 0 before the sum. Its backward is conv1d_backward:
// dx is this rank's slice, db the full column sums (the same on every rank).
template <typename T>
inline void row_parallel_conv1d_forward(const LinearSpec& s, Flat<T> f, const T* x, T* y, int N) {
  LinearSpec mine = s;
  if (f.tp && f.tp->split() && f.tp->rank != 0) mine.b = LinearSpec::kNoBias;
  conv1d_forward(mine, f, x, y, N);
  tp_sum(f.tp, y, static_cast<size_t>(N) * s.out);
}

// Row-parallel Linear (PyTorch layout, W [out, in] with this rank's `in` columns): as
// row_parallel_conv1d_forward.
template <typename T>
inline void row_parallel_linear_forward(const LinearSpec& s, Flat<T> f, const T* x, T* y, int N) {
  LinearSpec mine = s;
  if (f.tp && f.tp->split() && f.tp->rank != 0) mine.b = LinearSpec::kNoBias;
  linear_forward(mine, f, x, y, N);
  tp_sum(f.tp, y, static_cast<size_t>(N) * s.out);
}

template <typename T>
inline void layernorm_forward(const LayerNormSpec& s, Flat<T> f, const T* x, T* y, T* mean, T* rstd, int N) {
  kernels::layernorm_forward(x, f.p + s.gamma, f.p + s.beta, y, mean, rstd, N, s.C, s.eps);
}

template <typename T>
inline void layernorm_apply(const LayerNormSpec& s, Flat<T> f, const T* x, const T* mean, const T* rstd, T* y, int N) {
  kernels::layernorm_apply(x, f.p + s.gamma, f.p + s.beta, mean, rstd, y, N, s.C);
}

template <typename T>
inline void layernorm_backward(const LayerNormSpec& s, Flat<T> f, const T* x, const T* mean, const T* rstd,
                               const T* dy, T* dx, int N) {
  kernels::layernorm_backward(x, f.p + s.gamma, mean, rstd, dy, dx, f.g + s.gamma, f.g + s.beta, N, s.C);
}

template <typename T>
inline void rmsnorm_forward(const RmsNormSpec& s, Flat<T> f, const T* x, T* y, T* rstd, int N) {
  kernels::rmsnorm_forward(x, f.p + s.gamma, y, rstd, N, s.C, s.eps);
}

template <typename T>
inline void rmsnorm_backward(const RmsNormSpec& s, Flat<T> f, const T* x, const T* rstd, const T* dy, T* dx, int N) {
  kernels::rmsnorm_backward(x, f.p + s.gamma, rstd, dy, dx, f.g + s.gamma, N, s.C);
}

}  // namespace strata::nn
