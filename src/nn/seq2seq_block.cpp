#include "nn/seq2seq_block.h"

#include <utility>

namespace strata::nn {

template <typename T>
void seq2seq_encoder_block_forward(const Seq2SeqEncoderBlockSpec& s, Flat<T> f, const T* x, const int32_t* mask,
                                   const T* pos_bias, int B, int T_, const DropoutCtx& drop,
                                   Seq2SeqEncoderBlockSaved<T>& sv, Seq2SeqScratch<T>& sc) {
  attention_sublayer_forward<T>(s.self_attn, f, x, nullptr, mask, pos_bias, B, T_, T_, drop, sv.self_attn, sc);
  std::swap(sv.out, sv.ffn.out);  // the FFN writes the block's output
  ffn_sublayer_forward(s.ffn, f, sv.self_attn.out.data(), B * T_, drop, sv.ffn, sc);
  std::swap(sv.out, sv.ffn.out);
}

template <typename T>
void seq2seq_decoder_block_forward(const Seq2SeqDecoderBlockSpec& s, Flat<T> f, const T* x, const T* enc_out,
                                   const int32_t* enc_mask, const T* pos_bias, int B, int Td, int Ts,
                                   const DropoutCtx& drop, Seq2SeqDecoderBlockSaved<T>& sv, Seq2SeqScratch<T>& sc) {
  // self-attention: causal only (HF passes no decoder_attention_mask when it shifts the labels itself)
  attention_sublayer_forward<T>(s.self_attn, f, x, nullptr, nullptr, pos_bias, B, Td, Td, drop, sv.self_attn, sc);
  attention_sublayer_forward<T>(s.cross_attn, f, sv.self_attn.out.data(), enc_out, enc_mask, nullptr, B, Td, Ts, drop,
                                sv.cross_attn, sc);
  std::swap(sv.out, sv.ffn.out);
  ffn_sublayer_forward(s.ffn, f, sv.cross_attn.out.data(), B * Td, drop, sv.ffn, sc);
  std::swap(sv.out, sv.ffn.out);
}

template <typename T>
void seq2seq_encoder_block_backward(const Seq2SeqEncoderBlockSpec& s, Flat<T> f, const T* x, const int32_t* mask,
                                    int B, int T_, const DropoutCtx& drop, const Seq2SeqEncoderBlockSaved<T>& sv,
                                    Buffer<T>& d, Buffer<T>& d2, T* d_pos_bias, Seq2SeqScratch<T>& sc) {
  ffn_sublayer_backward(s.ffn, f, sv.self_attn.out.data(), B * T_, drop, sv.ffn, d.data(), d2.data(), sc);
  attention_sublayer_backward<T>(s.self_attn, f, x, nullptr, mask, B, T_, T_, drop, sv.self_attn, d2.data(), d.data(),
                                 nullptr, d_pos_bias, sc);
}

template <typename T>
void seq2seq_decoder_block_backward(const Seq2SeqDecoderBlockSpec& s, Flat<T> f, const T* x, const T* enc_out,
                                    const int32_t* enc_mask, int B, int Td, int Ts, const DropoutCtx& drop,
                                    const Seq2SeqDecoderBlockSaved<T>& sv, Buffer<T>& d, Buffer<T>& d2, T* d_enc,
                                    T* d_pos_bias, Seq2SeqScratch<T>& sc) {
  ffn_sublayer_backward(s.ffn, f, sv.cross_attn.out.data(), B * Td, drop, sv.ffn, d.data(), d2.data(), sc);
  attention_sublayer_backward<T>(s.cross_attn, f, sv.self_attn.out.data(), enc_out, enc_mask, B, Td, Ts, drop,
                                 sv.cross_attn, d2.data(), d.data(), d_enc, nullptr, sc);
  attention_sublayer_backward<T>(s.self_attn, f, x, nullptr, nullptr, B, Td, Td, drop, sv.self_attn, d.data(),
                                 d2.data(), nullptr, d_pos_bias, sc);
  std::swap(d, d2);
}

#define STRATA_SEQ2SEQ_BLOCK(T)                                                                                     \
  template void seq2seq_encoder_block_forward<T>(const Seq2SeqEncoderBlockSpec&, Flat<T>, const T*, const int32_t*, \
                                                 const T*, int, int, const DropoutCtx&, Seq2SeqEncoderBlockSaved<T>&, \
                                                 Seq2SeqScratch<T>&);                                               \
  template void seq2seq_decoder_block_forward<T>(const Seq2SeqDecoderBlockSpec&, Flat<T>, const T*, const T*,       \
                                                 const int32_t*, const T*, int, int, int, const DropoutCtx&,        \
                                                 Seq2SeqDecoderBlockSaved<T>&, Seq2SeqScratch<T>&);                 \
  template void seq2seq_encoder_block_backward<T>(const Seq2SeqEncoderBlockSpec&, Flat<T>, const T*, const int32_t*, \
                                                  int, int, const DropoutCtx&, const Seq2SeqEncoderBlockSaved<T>&,  \
                                                  Buffer<T>&, Buffer<T>&, T*, Seq2SeqScratch<T>&);                  \
  template void seq2seq_decoder_block_backward<T>(const Seq2SeqDecoderBlockSpec&, Flat<T>, const T*, const T*,      \
                                                  const int32_t*, int, int, int, const DropoutCtx&,                 \
                                                  const Seq2SeqDecoderBlockSaved<T>&, Buffer<T>&, Buffer<T>&, T*,   \
                                                  T*, Seq2SeqScratch<T>&);
STRATA_SEQ2SEQ_BLOCK(float)
STRATA_SEQ2SEQ_BLOCK(double)
#undef STRATA_SEQ2SEQ_BLOCK

}  // namespace strata::nn
