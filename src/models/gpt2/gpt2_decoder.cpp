#include "models/gpt2/gpt2_decoder.h"

#include "kernels/ops.h"
#include "util/error.h"

namespace strata {

template <typename T>
void Gpt2Decoder<T>::reset(int B, int capacity) {
  const ModelConfig& c = m_.config();
  STRATA_CHECK(B > 0 && capacity > 0 && capacity <= c.max_position_embeddings, "[gpt2 decoder] capacity ", capacity,
               " must be in 1..", c.max_position_embeddings, " (n_positions) with B = ", B, " > 0");
  B_ = B;
  capacity_ = capacity;
  len_ = 0;
  caches_.resize(m_.layers_.size());
  for (auto& cache : caches_) cache.reset(B, capacity, c.hidden_size);
}

template <typename T>
const T* Gpt2Decoder<T>::append(const int32_t* ids, int n) {
  const ModelConfig& c = m_.config();
  const int C = c.hidden_size, V = c.vocab_size, N = B_ * n;
  check_decoder_input("gpt2 decoder", ids, B_, n, len_, capacity_, V);
  const nn::Flat<T> f{m_.params().data(), nullptr};

  // Embeddings of the new positions len_..len_+n-1 of every row (no dropout at inference).
  ids_.host().assign(ids, ids + N);
  std::vector<int32_t>& pos = positions_.host();
  pos.resize(static_cast<size_t>(N));
  for (int i = 0; i < N; ++i) pos[i] = len_ + i % n;
  x_.resize(static_cast<size_t>(N) * C);
  x_.zero();
  kernels::embedding_forward(ids_.upload(), f.p + m_.wte_, x_.data(), N, C);
  kernels::embedding_forward(positions_.upload(), f.p + m_.wpe_, x_.data(), N, C);

  const T* x = x_.data();
  for (size_t i = 0; i < m_.layers_.size(); ++i) {
    nn::decoder_layer_decode(m_.layers_[i], f, x, B_, n, caches_[i], slots_[i % 2], scratch_);
    x = slots_[i % 2].out.data();
  }
  len_ += n;

  // Only each row's last position is scored: ln_f and the tied lm_head on [B, C].
  last_.resize(static_cast<size_t>(B_) * C);
  kernels::copy_rows(x + static_cast<size_t>(n - 1) * C, static_cast<size_t>(n) * C, last_.data(), C, B_, C);
  final_.resize(last_.size());
  mean_.resize(B_);
  rstd_.resize(B_);
  nn::layernorm_forward(m_.ln_f_, f, last_.data(), final_.data(), mean_.data(), rstd_.data(), B_);
  logits_.resize(static_cast<size_t>(B_) * V);
  nn::linear_forward(m_.lm_head_, f, final_.data(), logits_.data(), B_);
  return host_view(logits_.data(), logits_.size(), host_logits_);
}

template <typename T>
void Gpt2Decoder<T>::reorder(const std::vector<int32_t>& rows) {
  check_reorder_rows("gpt2 decoder", rows, B_);
  // Only the len_ filled positions of each row move; a row is [capacity_, C] in the cache.
  const size_t C = static_cast<size_t>(m_.config().hidden_size), row = static_cast<size_t>(capacity_) * C,
               filled = static_cast<size_t>(len_) * C;
  moved_.resize(static_cast<size_t>(B_) * filled);
  for (auto& cache : caches_)
    for (Buffer<T>* kv : {&cache.k, &cache.v}) {
      for (size_t b = 0; b < static_cast<size_t>(B_); ++b)
        kernels::copy(kv->data() + static_cast<size_t>(rows[b]) * row, moved_.data() + b * filled, filled);
      kernels::copy_rows(moved_.data(), filled, kv->data(), row, static_cast<size_t>(B_), filled);
    }
}

template class Gpt2Decoder<float>;
template class Gpt2Decoder<double>;

}  // namespace strata
