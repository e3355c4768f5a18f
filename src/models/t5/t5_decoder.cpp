#include "models/t5/t5_decoder.h"

#include "models/batch_checks.h"
#include "models/seq2seq_decoding.h"
#include "util/error.h"

namespace strata {

template <typename T>
T5Decoder<T>::T5Decoder(const T5Model<T>& m, const std::vector<int32_t>& source)
    : m_(m), source_len_(static_cast<int>(source.size())) {
  const ModelConfig& c = m.config();
  STRATA_CHECK(source_len_ > 0, "[t5 decoder] the source is empty");
  T5State<T> encoder;
  const T* enc_out = m.encode(source_batch(c, source, "t5 decoder"), nn::DropoutCtx{false, 0}, encoder);
  cross_ = cross_attention_caches(m.dec_, m.flat_for_forward(), enc_out, source_len_, tmp_);
}

template <typename T>
void T5Decoder<T>::reset(int B, int capacity) {
  // T5 has no position table: the capacity only sizes the caches (max_position_embeddings is unlimited).
  STRATA_CHECK(B > 0 && capacity > 0, "[t5 decoder] capacity ", capacity, " and B = ", B, " must be positive");
  B_ = B;
  capacity_ = capacity;
  len_ = 0;
  self_.resize(m_.dec_.size());
  for (size_t i = 0; i < self_.size(); ++i) self_[i].reset(B, capacity, m_.dec_[i].self_attn.k.out);
}

template <typename T>
const T* T5Decoder<T>::append(const int32_t* ids, int n) {
  const ModelConfig& c = m_.config();
  const int C = m_.t5_.d_model, N = B_ * n;
  check_decoder_input("t5 decoder", ids, B_, n, len_, capacity_, c.vocab_size);
  const nn::Flat<T> f = m_.flat_for_forward();
  const nn::DropoutCtx off{false, 0};
  new_rows_.ids.host().assign(ids, ids + N);
  m_.embed(m_.dec_stack_, B_, n, off, new_rows_);
  m_.position_bias(m_.dec_stack_, n, new_rows_, len_);
  const T* x = new_rows_.emb.data();
  for (size_t i = 0; i < m_.dec_.size(); ++i) {
    const T5DecoderBlockSpec& block = m_.dec_[i];
    nn::attention_sublayer_step(block.self_attn, f, x, B_, n, len_, self_[i], true, len_ + n, self_step_, tmp_,
                                new_rows_.bias.data());
    nn::attention_sublayer_step(block.cross_attn, f, self_step_.out.data(), B_, n, len_, cross_[i], false,
                                source_len_, cross_step_, tmp_);
    nn::ffn_sublayer_forward(block.ffn, f, cross_step_.out.data(), N, off, ffn_, scratch_);
    x = ffn_.out.data();
  }
  len_ += n;
  // final_layer_norm and the head are per position: only each row's last one is needed.
  last_new_positions(x, B_, n, C, last_rows_, last_hidden_);
  m_.finish(m_.dec_stack_, last_hidden_.data(), B_, off, last_);
  const T* logits = m_.lm_head_forward(last_.out.data(), B_, scaled_, logits_);
  const size_t V = static_cast<size_t>(m_.config().vocab_size);
  return host_view(m_.whole_vocabulary(logits, B_, whole_), B_ * V, host_logits_);
}

template <typename T>
void T5Decoder<T>::reorder(const std::vector<int32_t>& rows) {
  check_reorder_rows("t5 decoder", rows, B_);
  for (auto& cache : self_) cache.reorder(rows, tmp_);
}

template class T5Decoder<float>;
template class T5Decoder<double>;

}  // namespace strata
