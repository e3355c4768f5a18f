#include "nn/embeddings.h"

namespace strata::nn {

template <typename T>
void embeddings_forward(const EmbeddingsSpec& s, Flat<T> f, const int32_t* ids, const int32_t* pos_ids,
                        const int32_t* type_ids, int N, const DropoutCtx& drop, EmbeddingsSaved<T>& sv) {
  const size_t NC = static_cast<size_t>(N) * s.C;
  sv.sum.resize(NC);
  sv.out.resize(NC);
  sv.mean.resize(N);
  sv.rstd.resize(N);
  kernels::fill(sv.sum.data(), NC, T(0));
  if (f.tp && f.tp->split())
    vocab_parallel_embedding_forward(s.word_slice, f.tp, ids, f.p + s.word, sv.sum.data(), N, s.C);
  else
    kernels::embedding_forward(ids, f.p + s.word, sv.sum.data(), N, s.C);
  kernels::embedding_forward(pos_ids, f.p + s.position, sv.sum.data(), N, s.C);
  if (s.token_type != EmbeddingsSpec::kNone)
    kernels::embedding_forward(type_ids, f.p + s.token_type, sv.sum.data(), N, s.C);
  layernorm_forward(s.ln, f, sv.sum.data(), sv.out.data(), sv.mean.data(), sv.rstd.data(), N);
  kernels::dropout_forward(sv.out.data(), sv.out.data(), NC, drop.p(s.dropout), drop.seed, s.stream);
}

template <typename T>
void embeddings_backward(const EmbeddingsSpec& s, Flat<T> f, const int32_t* ids, const int32_t* pos_ids,
                         const int32_t* type_ids, int N, const DropoutCtx& drop, EmbeddingsSaved<T>& sv,
                         T* dout, Buffer<T>& scratch) {
  const size_t NC = static_cast<size_t>(N) * s.C;
  scratch.resize(NC);
  kernels::dropout_backward(dout, dout, NC, drop.p(s.dropout), drop.seed, s.stream);
  layernorm_backward(s.ln, f, sv.sum.data(), sv.mean.data(), sv.rstd.data(), dout, scratch.data(), N);
  if (f.tp && f.tp->split())
    vocab_parallel_embedding_backward(s.word_slice, ids, scratch.data(), f.g + s.word, N, s.C, sv.local_ids,
                                      s.word_padding_idx);
  else
    kernels::embedding_backward(ids, scratch.data(), f.g + s.word, N, s.C, s.word_padding_idx);
  kernels::embedding_backward(pos_ids, scratch.data(), f.g + s.position, N, s.C, s.position_padding_idx);
  if (s.token_type != EmbeddingsSpec::kNone)
    kernels::embedding_backward(type_ids, scratch.data(), f.g + s.token_type, N, s.C, -1);
}

template void embeddings_forward<float>(const EmbeddingsSpec&, Flat<float>, const int32_t*, const int32_t*,
                                        const int32_t*, int, const DropoutCtx&, EmbeddingsSaved<float>&);
template void embeddings_forward<double>(const EmbeddingsSpec&, Flat<double>, const int32_t*, const int32_t*,
                                         const int32_t*, int, const DropoutCtx&, EmbeddingsSaved<double>&);
template void embeddings_backward<float>(const EmbeddingsSpec&, Flat<float>, const int32_t*, const int32_t*,
                                         const int32_t*, int, const DropoutCtx&, EmbeddingsSaved<float>&, float*,
                                         Buffer<float>&);
template void embeddings_backward<double>(const EmbeddingsSpec&, Flat<double>, const int32_t*, const int32_t*,
                                          const int32_t*, int, const DropoutCtx&, EmbeddingsSaved<double>&, double*,
                                          Buffer<double>&);

}  // namespace strata::nn
