// Working memory of a transformer block, shared by all the blocks of a model: only one block
// runs at a time, and nothing in it outlives the call that fills it.
//   forward:  `wide` holds the FFN activation act(x W_1 + b_1) on its way into W_2; only the
//             pre-activation is kept for backward (one [N, F] buffer per block instead of two).
//             c1 holds a layer norm's output until the projection after it has read it (c2 the
//             first positions' residual in the encoder's first-token inference block).
//   backward: `wide` holds the activation again (recomputed from the pre-activation for the
//             W_2 weight gradient), which W_2's backward overwrites with its gradient; once the
//             FFN is done, the gradient of q|k|v. c1..c3 hold [N, C] gradients, and a consumed
//             one holds a recomputed layer-norm output for the weight gradient that reads it.
#pragma once
#include <algorithm>
#include <cstddef>

#include "tensor/buffer.h"

namespace strata::nn {

template <typename T>
struct BlockScratch {
  Buffer<T> c1, c2, c3;  // [N, C]
  Buffer<T> wide;        // [N, max(F, qkv width)]

  // qkv_width: this rank's q|k|v columns (3C unsplit); ffn: its FFN columns.
  static size_t wide_values(size_t N, size_t ffn, size_t qkv_width) { return N * std::max(ffn, qkv_width); }
  static size_t values(size_t N, size_t C, size_t ffn, size_t qkv_width) {
    return 3 * N * C + wide_values(N, ffn, qkv_width);
  }
  void size_for_backward(size_t N, size_t C, size_t ffn, size_t qkv_width) {
    for (Buffer<T>* b : {&c1, &c2, &c3}) b->resize(N * C);
    wide.resize(wide_values(N, ffn, qkv_width));
  }
};

}  // namespace strata::nn
