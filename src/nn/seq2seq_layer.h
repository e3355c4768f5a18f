// The post-LN sublayers of an encoder-decoder transformer (BART), each a forward/backward pair
// with caller-owned saved state:
//   attention: out = LN(x + dropout(out_proj(attn(q_proj x, k_proj kv, v_proj kv))))
//              kv = x for self-attention (encoder: padding mask; decoder: causal), the encoder's
//              output for the decoder's cross-attention (the encoder's padding mask)
//   FFN:       out = LN(x + dropout(fc2(act_dropout(act(fc1 x)))))
// Queries and keys may have different lengths (Tq decoder positions against Tk encoder ones),
// which the fused self-attention kernel (kernels::attention_forward, one qkv of one length)
// does not cover; q, k and v are separate HF Linear layers here, products per (row, head)
// through kernels::gemm.
#pragma once
#include <cstdint>

#include "nn/flat.h"
#include "tensor/buffer.h"

namespace strata::nn {

struct AttentionSublayerSpec {
  LinearSpec q, k, v, out;
  LayerNormSpec ln;
  int num_heads;
  bool causal;         // key j > query i gets probability 0
  float attn_dropout;  // on the attention probabilities (HF attention_dropout)
  float dropout;       // after out_proj (HF dropout)
  uint64_t stream;     // first of two dropout streams
};

template <typename T>
struct AttentionSublayerSaved {
  Buffer<T> q, k, v;     // [B*Tq, C], [B*Tk, C], [B*Tk, C]
  Buffer<T> probs;       // [B, NH, Tq, Tk] before dropout
  Buffer<T> ctx;         // [B*Tq, C]
  Buffer<T> h, mean, rstd, out;  // LN input, statistics, output [B*Tq, C]
};

// Working memory of the backward passes, shared by every sublayer of a model.
template <typename T>
struct Seq2SeqScratch {
  Buffer<T> probs_a, probs_b;        // [B, NH, Tq, Tk]
  Buffer<T> dq, dk, dv, dctx, d_h, t;  // [rows, C] (rows = max(Tq, Tk) * B)
  Buffer<T> wide_a, wide_b;          // [B*T, F]
};

// kv_mask [B*Tk]: 1 = attend, 0 = padding (null: every key). A query row with no key to attend
// attends uniformly to all Tk keys, as HF's additive large-negative mask makes it.
template <typename T>
void attention_sublayer_forward(const AttentionSublayerSpec& s, Flat<T> f, const T* x, const T* kv,
                                const int32_t* kv_mask, int B, int Tq, int Tk, const DropoutCtx& drop,
                                AttentionSublayerSaved<T>& saved, Seq2SeqScratch<T>& scratch);
// dx [B*Tq, C] is written; dkv [B*Tk, C] is accumulated into (for self-attention pass dkv = dx:
// it is added after dx is written). Parameter gradients are accumulated.
template <typename T>
void attention_sublayer_backward(const AttentionSublayerSpec& s, Flat<T> f, const T* x, const T* kv,
                                 const int32_t* kv_mask, int B, int Tq, int Tk, const DropoutCtx& drop,
                                 const AttentionSublayerSaved<T>& saved, const T* dout, T* dx, T* dkv,
                                 Seq2SeqScratch<T>& scratch);

struct FfnSublayerSpec {
  LinearSpec fc1, fc2;
  LayerNormSpec ln;
  kernels::Activation act;
  float act_dropout;  // after the activation (HF activation_dropout)
  float dropout;      // after fc2 (HF dropout)
  uint64_t stream;    // first of two dropout streams
};

template <typename T>
struct FfnSublayerSaved {
  Buffer<T> pre;                 // fc1 output [N, F] (backward recomputes the activation)
  Buffer<T> h, mean, rstd, out;  // LN input, statistics, output [N, C]
};

template <typename T>
void ffn_sublayer_forward(const FfnSublayerSpec& s, Flat<T> f, const T* x, int N, const DropoutCtx& drop,
                          FfnSublayerSaved<T>& saved, Seq2SeqScratch<T>& scratch);
// dx [N, C] is written (may not alias dout).
template <typename T>
void ffn_sublayer_backward(const FfnSublayerSpec& s, Flat<T> f, const T* x, int N, const DropoutCtx& drop,
                           const FfnSublayerSaved<T>& saved, const T* dout, T* dx, Seq2SeqScratch<T>& scratch);

}  // namespace strata::nn
