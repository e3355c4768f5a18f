#include "nn/vocab_parallel.h"

#include "kernels/ops.h"

namespace strata::nn {

namespace {
// Each id of the slice as a row of the local table; -1 (skipped) for the others and skip_id.
void local_rows(const VocabSlice& s, const int32_t* ids, int N, Buffer<int32_t>& out, int skip_id = -1) {
  resize_on_current_device(out, static_cast<size_t>(N));
  kernels::slice_ids(ids, N, s.v0, s.rows, skip_id, out.data());
}
}  // namespace

template <typename T>
void vocab_parallel_embedding_forward(const VocabSlice& s, const TensorGroup<T>* tp, const int32_t* ids,
                                      const T* table, T* out, int N, int C) {
  if (!(tp && tp->split())) {
    kernels::embedding_forward(ids, table, out, N, C);
    return;
  }
  // The lookup goes into a zeroed buffer and is summed before it is added to `out`, so that
  // out + lookup is rounded once, as unsplit.
  Buffer<int32_t> rows;
  local_rows(s, ids, N, rows);
  Buffer<T> part(static_cast<size_t>(N) * C);
  part.zero();
  kernels::gather_rows(table, rows.data(), part.data(), N, C);
  tp->all_reduce_sum(part.data(), part.size());
  kernels::add(out, part.data(), out, part.size());
}

template <typename T>
void vocab_parallel_embedding_backward(const VocabSlice& s, const int32_t* ids, const T* dout, T* dtable, int N,
                                       int C, Buffer<int32_t>& local_ids, int skip_id) {
  local_rows(s, ids, N, local_ids, skip_id);
  kernels::embedding_backward(local_ids.data(), dout, dtable, N, C, -1);
}

template <typename T>
void vocab_parallel_gather(const VocabSlice& s, const TensorGroup<T>* tp, const T* logits, T* whole, int N, int V) {
  // Each rank's columns in a zeroed whole, summed: exact, the other ranks add zeros.
  const size_t n = static_cast<size_t>(N) * V;
  kernels::fill(whole, n, T(0));
  kernels::copy_rows(logits, s.rows, whole + s.v0, V, N, s.rows);
  tp_sum(tp, whole, n);
}

template <typename T>
double vocab_parallel_cross_entropy(const VocabSlice& s, const TensorGroup<T>* tp, const T* logits,
                                    const int32_t* labels, T* dlogits, int N, double norm,
                                    VocabParallelCeScratch<T>& sc) {
  const bool split = tp && tp->split();
  sc.mx.resize(static_cast<size_t>(N));
  sc.sums.resize(2 * static_cast<size_t>(N));
  sc.sums.zero();
  kernels::ce_slice_row_max(logits, N, s.rows, sc.mx.data());
  if (split) tp->all_reduce_max(sc.mx.data(), sc.mx.size());
  double* sumexp = sc.sums.data();
  double* target = sumexp + N;
  kernels::ce_slice_exp(logits, labels, sc.mx.data(), N, s.rows, s.v0, dlogits, sumexp, target);
  if (split) tp->all_reduce_sum_f64(sc.sums.data(), sc.sums.size());
  const double loss = kernels::ce_slice_loss(labels, sc.mx.data(), sumexp, target, N, norm);
  kernels::ce_slice_grad(dlogits, labels, sumexp, N, s.rows, s.v0, norm);
  return loss;
}

#define STRATA_INSTANTIATE(T)                                                                                     \
  template void vocab_parallel_embedding_forward<T>(const VocabSlice&, const TensorGroup<T>*, const int32_t*,    \
                                                    const T*, T*, int, int);                                     \
  template void vocab_parallel_embedding_backward<T>(const VocabSlice&, const int32_t*, const T*, T*, int, int, \
                                                     Buffer<int32_t>&, int);                                \
  template void vocab_parallel_gather<T>(const VocabSlice&, const TensorGroup<T>*, const T*, T*, int, int);        \
  template double vocab_parallel_cross_entropy<T>(const VocabSlice&, const TensorGroup<T>*, const T*,           \
                                                  const int32_t*, T*, int, double, VocabParallelCeScratch<T>&);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

}  // namespace strata::nn
