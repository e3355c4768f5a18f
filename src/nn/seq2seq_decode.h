// Incremental decoding through the attention sublayers of nn/seq2seq_layer.h (generation with
// an encoder-decoder): each step runs only the new positions, their queries attending to keys
// and values kept from earlier steps (the decoder's self-attention) or computed once from the
// encoder's output (cross-attention). The same arithmetic as attention_sublayer_forward without
// dropout, so a cached decoder gives the logits the full forward gives.
#pragma once
#include <cstdint>

#include "nn/seq2seq_layer.h"

namespace strata::nn {

// Keys and values [rows, capacity, C]: per decoder row for self-attention, or one row that
// every decoder row shares (cross-attention over one source).
template <typename T>
struct KeyValueCache {
  Buffer<T> k, v;
  int rows = 0, capacity = 0;
  void reset(int rows_, int capacity_, int C);
};

// Projects kv [rows * n, C] (n positions per row) through s's key and value projections into
// positions [at, at + n) of each row of the cache.
template <typename T>
void cache_keys_values(const AttentionSublayerSpec& s, Flat<T> f, const T* kv, int rows, int n, int at,
                       KeyValueCache<T>& cache, Buffer<T>& tmp);

template <typename T>
struct AttentionStepBuffers {
  Buffer<T> q, scores, ctx, h, mean, rstd, out;  // out: the sublayer's output [B*n, C]
};

// out = LN(x + out_proj(attention)) for the n new positions per row, x [B*n, C] at positions
// [at, at + n). Row b's queries read the cache's row b (cache.rows == B; causal: key j <= the
// query's position) or its only row (cache.rows == 1; every one of `keys` keys, masked by
// kv_mask [keys] when given).
template <typename T>
void attention_sublayer_step(const AttentionSublayerSpec& s, Flat<T> f, const T* x, int B, int n, int at,
                             const KeyValueCache<T>& cache, int keys, const int32_t* kv_mask,
                             AttentionStepBuffers<T>& buf);

}  // namespace strata::nn
