// The sublayers of an encoder-decoder transformer, each a forward/backward pair with
// caller-owned saved state, in two arrangements (SublayerNorm):
//   post-LN (BART):   out = LN(x + dropout(sublayer(x)))
//   pre-RMS (T5):     out = x + dropout(sublayer(RMS(x)))   (RMS: T5LayerNorm, no mean, no bias)
// where sublayer is
//   attention: out_proj(attn(q_proj n, k_proj kv, v_proj kv)), kv = n for self-attention
//              (encoder: padding mask; decoder: causal), the encoder's output for the decoder's
//              cross-attention (the encoder's padding mask); scores optionally scaled by
//              1/sqrt(head size) and offset by a position bias (T5's relative buckets)
//   FFN:       fc2(act_dropout(act(fc1 n))), or gated: fc2(act_dropout(act(fc1 n) * gate n))
// Queries and keys may have different lengths (Tq decoder positions against Tk encoder ones),
// which the fused self-attention kernel (kernels::attention_forward, one qkv of one length)
// does not cover; q, k and v are separate HF Linear layers here, products per (row, head)
// through kernels::gemm. The attention's inner width (num_heads x head size, q.out) may differ
// from the model's (out.out): T5's d_kv.
//
// Under tensor parallelism (Flat::tp split over P ranks, Megatron-style) a rank holds an equal
// share of the heads and of the FFN's width, rank r the r-th: q, k, v (and their biases) are
// column-parallel, this rank's heads' rows [NH/P * HS, C]; out is row-parallel ([C, NH/P * HS],
// its bias whole); fc1 and gate column-parallel ([F/P, C]), fc2 row-parallel ([C, F/P], bias
// whole); the norms whole. A position bias is this rank's heads' columns [Tq*Tk, NH/P]. Forward
// sums the row-parallel outputs over the group, backward the column-parallel input gradients
// (the sublayer's input's, and for cross-attention the keys' and values' source's): one
// all-reduce per sublayer each way, two for cross-attention's backward. The attention
// probabilities' and the FFN activation's dropout draw, for this rank's share, the masks one
// process draws (kernels::dropout_block), so a split model computes what the whole one does.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "nn/flat.h"
#include "tensor/buffer.h"

namespace strata::nn {

enum class SublayerNorm {
  PostLayerNorm,  // LayerNorm of the residual sum (BART)
  PreRmsNorm      // RMS norm of the sublayer's input; the residual sum is the output (T5)
};

struct AttentionSublayerSpec {
  LinearSpec q, k, v, out;  // q, k, v: C -> NH * HS; out: NH * HS -> C (NH this rank's heads)
  SublayerNorm norm = SublayerNorm::PostLayerNorm;
  LayerNormSpec ln;  // PostLayerNorm
  RmsNormSpec rms;   // PreRmsNorm
  int num_heads;     // heads on this rank; head size HS = q.out / num_heads
  bool causal;       // key j > query i gets probability 0
  bool scale_scores = true;  // scores times 1/sqrt(HS) (T5 folds the factor into its init: false)
  float attn_dropout;  // on the attention probabilities (HF attention_dropout)
  float dropout;       // after out_proj (HF dropout)
  uint64_t stream;     // first of two dropout streams
};

template <typename T>
struct AttentionSublayerSaved {
  Buffer<T> normed;      // PreRmsNorm: the normalised input [B*Tq, C]
  Buffer<T> q, k, v;     // [B*Tq, NH*HS], [B*Tk, NH*HS], [B*Tk, NH*HS]
  Buffer<T> probs;       // [B, NH, Tq, Tk] before dropout
  Buffer<T> ctx;         // [B*Tq, NH*HS]
  Buffer<T> h, mean;     // PostLayerNorm: the LN's input and means [B*Tq, C]
  Buffer<T> rstd;        // the norm's reciprocal standard deviations [B*Tq]
  Buffer<T> out;         // [B*Tq, C]
};

// Working memory of the backward passes, shared by every sublayer of a model.
template <typename T>
struct Seq2SeqScratch {
  Buffer<T> probs_a, probs_b;        // [B, NH, Tq, Tk]
  Buffer<T> dq, dk, dv, dctx, d_h, t;  // [rows, max(C, NH*HS)] (rows = max(Tq, Tk) * B)
  Buffer<T> wide_a, wide_b, wide_c;  // [B*T, F] (wide_c: the gated FFN's)
};

// kv: the keys' and values' input [B*Tk, C] (cross-attention), or null for self-attention
// (Tk = Tq; they read the sublayer's own, normalised under PreRmsNorm, input).
// kv_mask [B*Tk]: 1 = attend, 0 = padding (null: every key). A query row with no key to attend
// attends uniformly to all Tk keys, as HF's additive large-negative mask makes it.
// pos_bias [Tq*Tk, NH] (row i*Tk + j, column h; the same for every batch row; null: none) is
// added to the (scaled) scores.
template <typename T>
void attention_sublayer_forward(const AttentionSublayerSpec& s, Flat<T> f, const T* x, const T* kv,
                                const int32_t* kv_mask, const T* pos_bias, int B, int Tq, int Tk,
                                const DropoutCtx& drop, AttentionSublayerSaved<T>& saved, Seq2SeqScratch<T>& scratch);
// dx [B*Tq, C] is written (may not alias dout); dkv [B*Tk, C] is accumulated into (cross-attention
// only; null for self-attention). d_pos_bias [Tq*Tk, NH] is accumulated into (null: none).
// Parameter gradients are accumulated.
template <typename T>
void attention_sublayer_backward(const AttentionSublayerSpec& s, Flat<T> f, const T* x, const T* kv,
                                 const int32_t* kv_mask, int B, int Tq, int Tk, const DropoutCtx& drop,
                                 const AttentionSublayerSaved<T>& saved, const T* dout, T* dx, T* dkv,
                                 T* d_pos_bias, Seq2SeqScratch<T>& scratch);

// The pieces of attention_sublayer_forward that incremental decoding (nn/seq2seq_decode.h)
// shares: the projections' input (x, or RMS(x) into saved.normed under PreRmsNorm), the
// scores' factor, one row's masked softmax, and the output from saved.ctx [N, NH*HS].
template <typename T>
const T* attention_input(const AttentionSublayerSpec& s, Flat<T> f, const T* x, int N, AttentionSublayerSaved<T>& saved);
template <typename T>
void attention_output(const AttentionSublayerSpec& s, Flat<T> f, const T* x, int N, const DropoutCtx& drop,
                      AttentionSublayerSaved<T>& saved);

// 1/sqrt(head size), or 1 where the model folds the factor into its init (T5).
template <typename T>
T score_scale(const AttentionSublayerSpec& s) {
  const int HS = s.q.out / s.num_heads;
  return s.scale_scores ? static_cast<T>(1.0 / std::sqrt(static_cast<double>(HS))) : T(1);
}

struct FfnSublayerSpec {
  LinearSpec fc1, fc2;  // C -> F, F -> C (T5: wi or wi_0, wo; F this rank's width)
  bool gated = false;   // act(fc1 n) * gate n (T5's gated-gelu: wi_0 gated by wi_1)
  LinearSpec gate;      // gated only
  SublayerNorm norm = SublayerNorm::PostLayerNorm;
  LayerNormSpec ln;  // PostLayerNorm
  RmsNormSpec rms;   // PreRmsNorm
  kernels::Activation act;
  float act_dropout;  // after the activation, or the gated product (HF activation_dropout; T5 dropout_rate)
  float dropout;      // after fc2 (HF dropout)
  uint64_t stream;    // first of two dropout streams
};

template <typename T>
struct FfnSublayerSaved {
  Buffer<T> normed;       // PreRmsNorm: the normalised input [N, C]
  Buffer<T> pre;          // fc1 output [N, F] (backward recomputes the activation)
  Buffer<T> lin;          // gated: the gate's output [N, F]
  Buffer<T> h, mean;      // PostLayerNorm: the LN's input and means [N, C]
  Buffer<T> rstd;         // the norm's [N]
  Buffer<T> out;          // [N, C]
};

template <typename T>
void ffn_sublayer_forward(const FfnSublayerSpec& s, Flat<T> f, const T* x, int N, const DropoutCtx& drop,
                          FfnSublayerSaved<T>& saved, Seq2SeqScratch<T>& scratch);
// dx [N, C] is written (may not alias dout).
template <typename T>
void ffn_sublayer_backward(const FfnSublayerSpec& s, Flat<T> f, const T* x, int N, const DropoutCtx& drop,
                           const FfnSublayerSaved<T>& saved, const T* dout, T* dx, Seq2SeqScratch<T>& scratch);

}  // namespace strata::nn
