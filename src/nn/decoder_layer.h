// The pre-LN causal transformer block of GPT-2 (HF GPT2Block, Conv1D projections):
//   h   = x + dropout(c_proj(attn(LN1(x))))
//   out = h + dropout(mlp_proj(act(c_fc(LN2(h)))))
// Attention is causal and also masks padded keys. forward fills a caller-owned Saved;
// backward reads it (same contract as nn/encoder_layer.h). decode is the inference form for
// generation: new positions attend to the keys and values of earlier ones kept in a cache.
#pragma once
#include <array>

#include "kernels/ops.h"
#include "nn/activation_policy.h"
#include "nn/block_scratch.h"
#include "nn/flat.h"
#include "tensor/buffer.h"

namespace strata::nn {

// Under tensor parallelism (Flat::tp split over P ranks) a rank holds heads head0 ..
// head0 + num_heads - 1 and F/P MLP columns: c_attn is column-parallel ([C, 3C/P], its q | k | v
// slices), attn_proj row-parallel ([C/P, C]), c_fc column-parallel ([C, F/P]), mlp_proj
// row-parallel ([F/P, C]); layer norms and the row-parallel biases are whole on every rank.
// Forward sums the two row-parallel outputs over the group, backward the two column-parallel
// input gradients: one all-reduce per sublayer each way, as Megatron-LM does.
struct DecoderLayerSpec {
  LayerNormSpec ln_1;
  LinearSpec c_attn;     // Conv1D [C, 3C]: q | k | v
  LinearSpec attn_proj;  // Conv1D [C, C]
  LayerNormSpec ln_2;
  LinearSpec c_fc;       // Conv1D [C, F]
  LinearSpec mlp_proj;   // Conv1D [F, C]
  int num_heads;         // heads on this rank
  int heads_total = 0;   // heads of the whole layer (0: num_heads, unsplit)
  int head0 = 0;         // the first of this rank's heads
  bool scale_attn;  // divide scores by sqrt(HS)
  kernels::Activation act;
  float attn_dropout;   // on attention probabilities (attn_pdrop)
  float resid_dropout;  // after each output projection (resid_pdrop)
  uint64_t stream;      // first of this layer's three dropout streams
};

template <typename T>
struct DecoderLayerSaved {
  // Backward recomputes the outputs of LN1 and LN2 from their inputs (x, h) and statistics,
  // and the MLP activation from its pre-activation.
  Buffer<T> mean1, rstd1;  // LN1 statistics
  Buffer<T> qkv;           // [N, 3C] (this rank's heads: 3C/P)
  Buffer<T> attn;          // attention's saved state (kernels::attention_saved_size; on the CPU
                           // the probabilities [B, NH, T, T], NH/P); the scores when decoding
  Buffer<T> ctx;           // [N, C] (C/P)
  Buffer<T> h;             // residual stream after attention (LN2 input)
  Buffer<T> mean2, rstd2;  // LN2 statistics
  Buffer<T> pre;           // MLP pre-activation [N, F] (backward overwrites it with act')
  Buffer<T> out;           // [N, C] (the next layer's input)
  // Every buffer backward reads: all but `out` (nn/block_activations.h moves these).
  std::array<Buffer<T>*, 9> for_backward() { return {&mean1, &rstd1, &qkv, &attn, &ctx, &h, &mean2, &rstd2, &pre}; }
  // Those backward reads only as inputs of products: attention's q, k, v and the context.
  std::array<Buffer<T>*, 2> product_inputs() { return {&qkv, &ctx}; }
  // What for_backward() holds for batch B x T (what forward allocates besides `out`), its
  // product inputs (q|k|v, ctx) named: the memory estimate's count. On a tensor-parallel rank
  // of `tp`, F and NH are the whole layer's and split here. Attention's share is what the
  // current device's op saves (kernels::attention_saved_size).
  static BlockSaved block_saved(size_t N, size_t C, size_t F, size_t B, size_t NH, size_t T_, size_t tp = 1) {
    const kernels::AttentionShape attention{static_cast<int>(B), static_cast<int>(T_), static_cast<int>(C / tp),
                                           static_cast<int>(NH / tp), 0.f, 0, 0};
    BlockSaved s{N * C + 4 * N * C / tp + 4 * N + kernels::attention_saved_size(attention) + N * (F / tp)};
    s.add_product_input(3 * N * C / tp);
    s.add_product_input(N * C / tp);
    return s;
  }
};

// Keys and values of one block's earlier positions, for incremental decoding: [B, capacity, C]
// each (the layout kernels::attention_cached_forward reads), `len` positions filled per row.
template <typename T>
struct DecoderLayerCache {
  Buffer<T> k, v;
  int B = 0, capacity = 0, len = 0;
  void reset(int rows, int cap, int C) {
    B = rows;
    capacity = cap;
    len = 0;
    k.resize(static_cast<size_t>(rows) * cap * C);
    v.resize(k.size());
  }
};

template <typename T>
void decoder_layer_forward(const DecoderLayerSpec& s, Flat<T> f, const T* x, const int32_t* mask, int B, int T_,
                           const DropoutCtx& drop, DecoderLayerSaved<T>& saved, BlockScratch<T>& scratch);

// n new positions per row, x[B*n, C], against the cache (no dropout): appends their keys and
// values to the cache (cache.len + n <= cache.capacity) and writes the block output to sv.out.
// The output equals decoder_layer_forward's at those positions over the whole sequence (up to
// the rounding of differently shaped products). sv.attn holds the scores [B, NH, n, len+n].
template <typename T>
void decoder_layer_decode(const DecoderLayerSpec& s, Flat<T> f, const T* x, int B, int n, DecoderLayerCache<T>& cache,
                          DecoderLayerSaved<T>& sv, BlockScratch<T>& scratch);

// dx is written (may not alias dout); parameter gradients are accumulated. Consumes `saved`:
// its pre-activation is overwritten (a second backward needs a second forward).
template <typename T>
void decoder_layer_backward(const DecoderLayerSpec& s, Flat<T> f, const T* x, int B, int T_, const DropoutCtx& drop,
                            DecoderLayerSaved<T>& saved, const T* dout, T* dx, BlockScratch<T>& scratch);

}  // namespace strata::nn
