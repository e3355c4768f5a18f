// Incremental decoding through the attention sublayers of nn/seq2seq_layer.h (generation with
// an encoder-decoder): each step runs only the new positions, their queries attending to keys
// and values kept from earlier steps (the decoder's self-attention) or computed once from the
// encoder's output (cross-attention). The same arithmetic as attention_sublayer_forward without
// dropout (its input, softmax and output pieces), so a cached decoder gives the logits the full
// forward gives. Either arrangement (post-LN, pre-RMS), with or without a position bias (T5's
// relative one, for the new rows only).
#pragma once
#include <cstdint>
#include <vector>

#include "nn/seq2seq_layer.h"

namespace strata::nn {

// Keys and values [rows, capacity, NH*HS]: per decoder row for self-attention, or one row that
// every decoder row shares (cross-attention over one source).
template <typename T>
struct KeyValueCache {
  Buffer<T> k, v;
  int rows = 0, capacity = 0;
  void reset(int rows_, int capacity_, int width);
  // Row i takes old row order[i]'s keys and values (beam search's CausalDecoder::reorder).
  void reorder(const std::vector<int32_t>& order, Buffer<T>& tmp);
};

// Projects kv [rows * n, C] (n positions per row) through s's key and value projections into
// positions [at, at + n) of each row of the cache. For self-attention kv is the sublayer's
// input after attention_input (normalised under PreRmsNorm): attention_sublayer_step does it.
template <typename T>
void cache_keys_values(const AttentionSublayerSpec& s, Flat<T> f, const T* kv, int rows, int n, int at,
                       KeyValueCache<T>& cache, Buffer<T>& tmp);

// The sublayer's output (saved.out [B*n, C]) for the n new positions per row, x [B*n, C] at
// positions [at, at + n). Self-attention (self_cache): the new keys and values are appended to
// the cache's row b, and row b's queries attend causally to its keys [0, at + n). Otherwise
// (cross-attention) every row's queries attend to all `keys` keys of the cache's only row.
// pos_bias [n*keys, NH] (row i*keys + j: new query i against key j, column h; the same for every
// row; null: none) is added to the scores, as attention_sublayer_forward adds its own.
template <typename T>
void attention_sublayer_step(const AttentionSublayerSpec& s, Flat<T> f, const T* x, int B, int n, int at,
                             KeyValueCache<T>& cache, bool self_cache, int keys, AttentionSublayerSaved<T>& saved,
                             Buffer<T>& tmp, const T* pos_bias = nullptr);

}  // namespace strata::nn
