// Vocabulary-parallel embedding and cross entropy (Megatron-LM): under tensor parallelism each
// rank holds rows v0 .. v0+rows-1 of the token embedding table [V, C], so the tied LM head
// computes only those columns of the logits. Neither the table nor the logits are ever
// gathered: a lookup is this rank's rows (zero elsewhere) summed over the group, and the loss
// needs three reductions of N values (the row max, the sum of exponentials, the target logit).
#pragma once
#include <cstddef>
#include <cstdint>

#include "nn/tensor_group.h"
#include "tensor/buffer.h"

namespace strata::nn {

struct VocabSlice {
  int v0 = 0, rows = 0;  // this rank's first row and row count; unsplit: 0 and V
};

// out[n,:] += table[ids[n] - v0, :] for the ids in the slice, then (split) summed over the
// group: every rank ends with the whole lookup added, exactly (the other ranks add zeros).
template <typename T>
void vocab_parallel_embedding_forward(const VocabSlice& s, const TensorGroup<T>* tp, const int32_t* ids,
                                      const T* table, T* out, int N, int C);
// dtable[ids[n] - v0, :] += dout[n, :] for the ids in the slice but skip_id (nn.Embedding's
// padding_idx, a global id; -1: none); dout is whole on every rank. `local_ids` is scratch
// (on the current device once used).
template <typename T>
void vocab_parallel_embedding_backward(const VocabSlice& s, const int32_t* ids, const T* dout, T* dtable, int N,
                                       int C, Buffer<int32_t>& local_ids, int skip_id = -1);

// whole[N, V] <- every rank's columns of the logits (this rank's: logits[N, rows]), the same on
// every rank: what an inference pass reports (training never gathers them). Unsplit, a copy.
template <typename T>
void vocab_parallel_gather(const VocabSlice& s, const TensorGroup<T>* tp, const T* logits, T* whole, int N, int V);

// Cross entropy of logits[N, rows] (this rank's vocabulary columns) against global labels
// (-100 ignored): returns sum(loss) / norm, the same on every rank, and writes this slice of
// d(that)/d(logits) into dlogits. Unsplit (tp null), equals kernels::cross_entropy up to
// rounding. Scratch buffers are reused across calls.
template <typename T>
struct VocabParallelCeScratch {
  Buffer<T> mx;
  Buffer<double> sums;  // sumexp | target
};
template <typename T>
double vocab_parallel_cross_entropy(const VocabSlice& s, const TensorGroup<T>* tp, const T* logits,
                                    const int32_t* labels, T* dlogits, int N, double norm,
                                    VocabParallelCeScratch<T>& scratch);

}  // namespace strata::nn
