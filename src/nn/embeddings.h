// Input embeddings: out = dropout(LN(word[ids] + position[pos] + token_type[types])).
// Token types are absent in DistilBERT (type_table == kNone).
#pragma once
#include <vector>

#include "nn/flat.h"
#include "nn/vocab_parallel.h"
#include "tensor/buffer.h"

namespace strata::nn {

struct EmbeddingsSpec {
  static constexpr size_t kNone = ~size_t{0};
  size_t word, position, token_type;  // table offsets; token_type may be kNone
  int C;
  int word_padding_idx;      // nn.Embedding(padding_idx=...): that row gets no gradient; -1 none
  int position_padding_idx;  // RoBERTa's position table has one too
  LayerNormSpec ln;
  float dropout;
  uint64_t stream;
  // Under tensor parallelism (Flat::tp split) the word table holds this rank's rows only
  // (nn/vocab_parallel.h); position, token-type tables and the LayerNorm are whole.
  VocabSlice word_slice;
};

template <typename T>
struct EmbeddingsSaved {
  Buffer<T> sum, mean, rstd, out;
  Buffer<int32_t> local_ids;  // backward scratch under tensor parallelism
};

// type_ids is read only when the spec has a token-type table.
template <typename T>
void embeddings_forward(const EmbeddingsSpec& s, Flat<T> f, const int32_t* ids, const int32_t* pos_ids,
                        const int32_t* type_ids, int N, const DropoutCtx& drop, EmbeddingsSaved<T>& saved);

// dout is consumed as scratch (overwritten).
template <typename T>
void embeddings_backward(const EmbeddingsSpec& s, Flat<T> f, const int32_t* ids, const int32_t* pos_ids,
                         const int32_t* type_ids, int N, const DropoutCtx& drop, EmbeddingsSaved<T>& saved,
                         T* dout, Buffer<T>& scratch);

}  // namespace strata::nn
