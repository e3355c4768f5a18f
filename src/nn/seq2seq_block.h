// The blocks of an encoder-decoder (BART, T5) as nn::BlockActivations keeps them: an encoder
// block is self-attention then the FFN; a decoder block causal self-attention, cross-attention
// over the encoder's output (with the encoder's padding mask), then the FFN (the sublayers of
// nn/seq2seq_layer.h). A block's saved state is its sublayers'; the FFN writes the block's
// output straight into `out`, the buffer BlockActivations lends and hands to the next record,
// so the FFN's own `out` stays empty.
//
// Recomputing a block from its input (activation checkpointing) needs nothing else the block
// forward read: the batch's mask, the position bias and, for a decoder block, the encoder's
// output, which its model keeps for the whole pass.
#pragma once
#include <array>
#include <cstdint>

#include "kernels/ops.h"
#include "nn/seq2seq_layer.h"

namespace strata::nn {

struct Seq2SeqEncoderBlockSpec {
  AttentionSublayerSpec self_attn;
  FfnSublayerSpec ffn;
};
struct Seq2SeqDecoderBlockSpec {
  AttentionSublayerSpec self_attn, cross_attn;
  FfnSublayerSpec ffn;
};

template <typename T>
struct Seq2SeqEncoderBlockSaved {
  AttentionSublayerSaved<T> self_attn;
  FfnSublayerSaved<T> ffn;
  Buffer<T> out;  // [B*T, C]
  // Every buffer backward reads: all but `out` (the sublayers' unused ones stay empty).
  std::array<Buffer<T>*, 16> for_backward() {
    return {&self_attn.normed, &self_attn.q, &self_attn.k, &self_attn.v, &self_attn.probs, &self_attn.ctx,
            &self_attn.h, &self_attn.mean, &self_attn.rstd, &self_attn.out, &ffn.normed, &ffn.pre, &ffn.lin,
            &ffn.h, &ffn.mean, &ffn.rstd};
  }
  // Those backward reads only as inputs of products (the projections' normalised inputs, q,
  // k, v, the context).
  std::array<Buffer<T>*, 6> product_inputs() {
    return {&self_attn.normed, &self_attn.q, &self_attn.k, &self_attn.v, &self_attn.ctx, &ffn.normed};
  }
};

template <typename T>
struct Seq2SeqDecoderBlockSaved {
  AttentionSublayerSaved<T> self_attn, cross_attn;
  FfnSublayerSaved<T> ffn;
  Buffer<T> out;  // [B*Td, C]
  std::array<Buffer<T>*, 26> for_backward() {
    return {&self_attn.normed,  &self_attn.q,     &self_attn.k,      &self_attn.v,     &self_attn.probs,
            &self_attn.ctx,     &self_attn.h,     &self_attn.mean,   &self_attn.rstd,  &self_attn.out,
            &cross_attn.normed, &cross_attn.q,    &cross_attn.k,     &cross_attn.v,    &cross_attn.probs,
            &cross_attn.ctx,    &cross_attn.h,    &cross_attn.mean,  &cross_attn.rstd, &cross_attn.out,
            &ffn.normed,        &ffn.pre,         &ffn.lin,          &ffn.h,           &ffn.mean,
            &ffn.rstd};
  }
  std::array<Buffer<T>*, 11> product_inputs() {
    return {&self_attn.normed,  &self_attn.q, &self_attn.k, &self_attn.v, &self_attn.ctx, &cross_attn.normed,
            &cross_attn.q,      &cross_attn.k, &cross_attn.v, &cross_attn.ctx, &ffn.normed};
  }
};

// x [B*T, C] -> saved.out. mask [B*T] (null: every key); pos_bias [T*T, NH] (null: none).
template <typename T>
void seq2seq_encoder_block_forward(const Seq2SeqEncoderBlockSpec& s, Flat<T> f, const T* x, const int32_t* mask,
                                   const T* pos_bias, int B, int T_, const DropoutCtx& drop,
                                   Seq2SeqEncoderBlockSaved<T>& saved, Seq2SeqScratch<T>& scratch);
// x [B*Td, C] -> saved.out, reading enc_out [B*Ts, C] with its mask enc_mask [B*Ts].
template <typename T>
void seq2seq_decoder_block_forward(const Seq2SeqDecoderBlockSpec& s, Flat<T> f, const T* x, const T* enc_out,
                                   const int32_t* enc_mask, const T* pos_bias, int B, int Td, int Ts,
                                   const DropoutCtx& drop, Seq2SeqDecoderBlockSaved<T>& saved,
                                   Seq2SeqScratch<T>& scratch);

// d: d(output) in, d(input) out; d2: working memory of the same size (the two may be swapped).
// d_pos_bias [T*T, NH] accumulates the self-attention's share (null: none); the decoder's d_enc
// [B*Ts, C] the cross-attention's. Parameter gradients accumulate.
template <typename T>
void seq2seq_encoder_block_backward(const Seq2SeqEncoderBlockSpec& s, Flat<T> f, const T* x, const int32_t* mask,
                                    int B, int T_, const DropoutCtx& drop, const Seq2SeqEncoderBlockSaved<T>& saved,
                                    Buffer<T>& d, Buffer<T>& d2, T* d_pos_bias, Seq2SeqScratch<T>& scratch);
template <typename T>
void seq2seq_decoder_block_backward(const Seq2SeqDecoderBlockSpec& s, Flat<T> f, const T* x, const T* enc_out,
                                    const int32_t* enc_mask, int B, int Td, int Ts, const DropoutCtx& drop,
                                    const Seq2SeqDecoderBlockSaved<T>& saved, Buffer<T>& d, Buffer<T>& d2, T* d_enc,
                                    T* d_pos_bias, Seq2SeqScratch<T>& scratch);

// What a range of units that ends on the decoder side hands on (models/model.h's boundary): the
// decoder's hidden state, then the encoder's output that the next stage's cross-attention reads,
// [dec_values ; enc_values]; backward hands the two gradients on the same way.
template <typename T>
const T* join_decoder_boundary(const T* dec, const T* enc, size_t dec_values, size_t enc_values, Buffer<T>& out) {
  out.resize(dec_values + enc_values);
  kernels::copy(dec, out.data(), dec_values);
  kernels::copy(enc, out.data() + dec_values, enc_values);
  return out.data();
}
template <typename T>
void split_decoder_boundary(const T* boundary, size_t dec_values, size_t enc_values, T* dec, T* enc) {
  kernels::copy(boundary, dec, dec_values);
  kernels::copy(boundary + dec_values, enc, enc_values);
}

}  // namespace strata::nn
