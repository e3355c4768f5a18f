// The post-LN transformer encoder block of BERT, RoBERTa and DistilBERT:
//   h1  = LN1(x + dropout(attn(x) W_o + b_o))
//   out = LN2(h1 + dropout(act(h1 W_1 + b_1) W_2 + b_2))
// forward fills a caller-owned Saved; backward reads it. Dropping Saved and re-running
// forward from x is activation checkpointing; moving it to host memory is offloading. Both
// passes work in a BlockScratch shared by the model's blocks (nn/block_scratch.h).
#pragma once
#include <array>

#include "kernels/ops.h"
#include "nn/activation_policy.h"
#include "nn/block_scratch.h"
#include "nn/flat.h"
#include "tensor/buffer.h"

namespace strata::nn {

// Under tensor parallelism (Flat::tp split over P ranks) a rank holds heads head0 ..
// head0 + num_heads - 1 and F/P FFN columns: qkv is column-parallel (its rows of q, of k and of
// v: [3C/P, C]), attn_out row-parallel ([C, C/P]), ffn_in column-parallel ([F/P, C]), ffn_out
// row-parallel ([C, F/P]); layer norms and the row-parallel biases are whole on every rank. One
// all-reduce per sublayer each way, as nn/decoder_layer.h.
struct EncoderLayerSpec {
  LinearSpec qkv;  // q, k, v weights (and biases) are contiguous: one [3C, C] GEMM
  LinearSpec attn_out;
  LayerNormSpec ln_attn;
  LinearSpec ffn_in, ffn_out;
  LayerNormSpec ln_out;
  int num_heads;        // heads on this rank
  int heads_total = 0;  // heads of the whole layer (0: num_heads, unsplit)
  int head0 = 0;        // the first of this rank's heads
  kernels::Activation act;
  float attn_dropout;      // on attention probabilities
  float attn_out_dropout;  // after the attention output projection (0 in DistilBERT)
  float ffn_dropout;       // after the second FFN projection
  uint64_t stream;         // first of this layer's three dropout streams
};

template <typename T>
struct EncoderLayerSaved {
  Buffer<T> qkv;           // [N, 3C] (this rank's heads: 3C/P)
  Buffer<T> attn;          // attention's saved state (kernels::attention_saved_size; on the CPU
                           // the probabilities [B, NH, T, T], NH/P); [B, NH, T] first-token probs
  Buffer<T> ctx;           // [N, C] (C/P)
  Buffer<T> h1, mean1, rstd1;  // LN1 input and stats (backward recomputes its output)
  Buffer<T> pre;           // FFN pre-activation [N, F] (backward recomputes the activation, then
                           // overwrites it with the activation's derivative)
  Buffer<T> h2, mean2, rstd2, out;  // LN2 input, stats, output (the next layer's input)
  // Every buffer backward reads: all but `out` (nn/block_activations.h moves these).
  std::array<Buffer<T>*, 10> for_backward() {
    return {&qkv, &attn, &ctx, &h1, &mean1, &rstd1, &pre, &h2, &mean2, &rstd2};
  }
  // Those backward reads only as inputs of products: attention's q, k, v and the context.
  std::array<Buffer<T>*, 2> product_inputs() { return {&qkv, &ctx}; }
  // What for_backward() holds for batch B x T (what forward allocates besides `out`), its
  // product inputs (q|k|v, ctx) named: the memory estimate's count. On a tensor-parallel rank
  // of `tp`, F and NH are the whole layer's and split here. Attention's share is what the
  // current device's op saves (kernels::attention_saved_size).
  static BlockSaved block_saved(size_t N, size_t C, size_t F, size_t B, size_t NH, size_t T_, size_t tp = 1) {
    const kernels::AttentionShape attention{static_cast<int>(B), static_cast<int>(T_), static_cast<int>(C / tp),
                                           static_cast<int>(NH / tp), 0.f, 0, 0};
    BlockSaved s{2 * N * C + 4 * N * C / tp + 4 * N + kernels::attention_saved_size(attention) + N * (F / tp)};
    s.add_product_input(3 * N * C / tp);
    s.add_product_input(N * C / tp);
    return s;
  }
};

template <typename T>
void encoder_layer_forward(const EncoderLayerSpec& s, Flat<T> f, const T* x, const int32_t* mask, int B, int T_,
                           const DropoutCtx& drop, EncoderLayerSaved<T>& saved, BlockScratch<T>& scratch);

// Inference for a head that reads only each sequence's first position (sequence
// classification's [CLS]): keys and values from every position, everything else on the B first
// positions only; sv.out is [B, C], sv.out's row b equal to encoder_layer_forward's row b*T up to
// the rounding of the smaller products. No dropout, unsplit.
template <typename T>
void encoder_layer_forward_first_token(const EncoderLayerSpec& s, Flat<T> f, const T* x, const int32_t* mask, int B,
                                       int T_, EncoderLayerSaved<T>& saved, BlockScratch<T>& scratch);

// dx is written (may not alias dout); parameter gradients are accumulated. Consumes `saved`:
// its pre-activation is overwritten (a second backward needs a second forward).
template <typename T>
void encoder_layer_backward(const EncoderLayerSpec& s, Flat<T> f, const T* x, int B, int T_,
                            const DropoutCtx& drop, EncoderLayerSaved<T>& saved, const T* dout, T* dx,
                            BlockScratch<T>& scratch);

}  // namespace strata::nn
