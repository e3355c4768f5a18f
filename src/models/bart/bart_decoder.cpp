#include "models/bart/bart_decoder.h"

#include "models/batch_checks.h"
#include "models/seq2seq_decoding.h"
#include "util/error.h"

namespace strata {

template <typename T>
BartDecoder<T>::BartDecoder(const BartModel<T>& m, const std::vector<int32_t>& source)
    : m_(m), source_len_(static_cast<int>(source.size())) {
  const ModelConfig& c = m.config();
  STRATA_CHECK(source_len_ > 0 && source_len_ <= c.max_position_embeddings, "[bart decoder] a source of ",
               source_len_, " tokens; the encoder takes 1..", c.max_position_embeddings);
  BartState<T> encoder;
  const T* enc_out = m.encode(source_batch(c, source, "bart decoder"), nn::DropoutCtx{false, 0}, encoder);
  cross_ = cross_attention_caches(m.dec_, m.flat_for_forward(), enc_out, source_len_, tmp_);
}

template <typename T>
void BartDecoder<T>::reset(int B, int capacity) {
  const int positions = m_.config().max_position_embeddings;
  STRATA_CHECK(B > 0 && capacity > 0 && capacity <= positions, "[bart decoder] capacity ", capacity, " must be in 1..",
               positions, " (max_position_embeddings) with B = ", B, " > 0");
  B_ = B;
  capacity_ = capacity;
  len_ = 0;
  self_.resize(m_.dec_.size());
  for (size_t i = 0; i < self_.size(); ++i) self_[i].reset(B, capacity, m_.dec_[i].self_attn.k.out);
}

template <typename T>
const T* BartDecoder<T>::append(const int32_t* ids, int n) {
  const ModelConfig& c = m_.config();
  const int C = c.hidden_size, V = c.vocab_size, N = B_ * n;
  check_decoder_input("bart decoder", ids, B_, n, len_, capacity_, V);
  const nn::Flat<T> f = m_.flat_for_forward();
  const nn::DropoutCtx off{false, 0};
  m_.embed(m_.dec_emb_, std::vector<int32_t>(ids, ids + N), B_, n, off, emb_, len_);
  const T* x = emb_.out.data();
  for (size_t i = 0; i < m_.dec_.size(); ++i) {
    const BartDecoderLayerSpec& layer = m_.dec_[i];
    nn::attention_sublayer_step(layer.self_attn, f, x, B_, n, len_, self_[i], true, len_ + n, self_step_, tmp_);
    nn::attention_sublayer_step(layer.cross_attn, f, self_step_.out.data(), B_, n, len_, cross_[i], false,
                                source_len_, cross_step_, tmp_);
    nn::ffn_sublayer_forward(layer.ffn, f, cross_step_.out.data(), N, off, ffn_, scratch_);
    x = ffn_.out.data();
  }
  len_ += n;
  last_new_positions(x, B_, n, C, last_rows_, last_);
  m_.lm_head_forward(last_.data(), B_, logits_);
  return host_view(m_.whole_vocabulary(logits_.data(), B_, whole_), static_cast<size_t>(B_) * V, host_logits_);
}

template <typename T>
void BartDecoder<T>::reorder(const std::vector<int32_t>& rows) {
  check_reorder_rows("bart decoder", rows, B_);
  for (auto& cache : self_) cache.reorder(rows, tmp_);
}

template class BartDecoder<float>;
template class BartDecoder<double>;

}  // namespace strata
