// The tensor-parallel group as layers see it: this rank's index among `degree` ranks that
// each hold a slice of every split matrix, and the two collectives Megatron-style layers need.
// nn/ knows nothing of MPI: train/ fills the callbacks with the tensor-parallel communicator.
// A null group (or degree 1) is one process: every call below is then a no-op.
#pragma once
#include <cstddef>
#include <functional>

namespace strata::nn {

template <typename T>
struct TensorGroup {
  int degree = 1, rank = 0;
  // In place over the group; every rank gets the same values (the sum of two ranks' values
  // is the same whichever rank adds them).
  std::function<void(T*, size_t)> all_reduce_sum;
  std::function<void(T*, size_t)> all_reduce_max;
  std::function<void(double*, size_t)> all_reduce_sum_f64;  // sums kept in double (the loss)

  bool split() const { return degree > 1; }
};

// The conjugate operators of Megatron's tensor parallelism: `g` sums the partial outputs of a
// row-parallel layer in forward (its backward is the identity); `f` is the identity in
// forward and sums the partial input gradients of a column-parallel layer in backward. Both
// reduce to one all-reduce of `n` values where they are not the identity.
template <typename T>
inline void tp_sum(const TensorGroup<T>* tp, T* x, size_t n) {
  if (tp && tp->split()) tp->all_reduce_sum(x, n);
}

}  // namespace strata::nn
