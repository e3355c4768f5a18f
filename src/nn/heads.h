// Task heads on top of the encoder's last hidden state h [B*T, C].
#pragma once
#include "nn/flat.h"
#include "nn/vocab_parallel.h"
#include "tensor/buffer.h"

namespace strata::nn {

// Sequence classification from the first token:
//   logits = out(dropout(act(dense(pre_dropout(h[:, 0])))))
// BERT: dense = pooler, tanh, no pre-dropout. RoBERTa: pre-dropout, tanh.
// DistilBERT: dense = pre_classifier, relu.
struct ClassifierHeadSpec {
  float pre_dropout;
  LinearSpec dense;
  kernels::Activation act;
  float dropout;
  LinearSpec out;
  uint64_t stream;  // two dropout streams
};

template <typename T>
struct ClassifierHeadSaved {
  Buffer<T> x0, pre, hid, logits;  // [B,C], [B,C], [B,C], [B,L]
  Buffer<T> d_hid, d_x0;           // backward's [B,C] gradients, kept so later steps allocate nothing
};

template <typename T>
void classifier_head_forward(const ClassifierHeadSpec& s, Flat<T> f, const T* h, int B, int T_,
                             const DropoutCtx& drop, ClassifierHeadSaved<T>& saved);
// dh [B*T, C] is written: zero except each sequence's first row.
template <typename T>
void classifier_head_backward(const ClassifierHeadSpec& s, Flat<T> f, int B, int T_, const DropoutCtx& drop,
                              ClassifierHeadSaved<T>& saved, const T* dlogits, T* dh);

// Masked-LM head: logits = LN(act(dense(h))) E^T + bias, E = the word embeddings (tied).
// dense may narrow the width (ALBERT: hidden -> embedding_size).
struct MaskedLMHeadSpec {
  LinearSpec dense;
  kernels::Activation act;
  LayerNormSpec ln;
  LinearSpec decoder;  // w = word embedding table [V, C], b = the head's own bias [V]
  VocabSlice vocab;    // under tensor parallelism: this rank's rows of both (decoder.out of them)
};

template <typename T>
struct MaskedLMHeadSaved {
  Buffer<T> pre, act, mean, rstd, normed, logits;  // logits [N, V]
};

template <typename T>
void masked_lm_head_forward(const MaskedLMHeadSpec& s, Flat<T> f, const T* h, int N, MaskedLMHeadSaved<T>& saved);
// dh [N, C] is written. `scratch` holds two [N, C] temporaries.
template <typename T>
void masked_lm_head_backward(const MaskedLMHeadSpec& s, Flat<T> f, const T* h, int N,
                             const MaskedLMHeadSaved<T>& saved, const T* dlogits, T* dh, Buffer<T>& scratch);

// Per-token head: logits[N, out] = out(dropout(h)) at every position. Token classification
// (out = num_labels) and question answering's qa_outputs (out = 2: start, end). The dropout
// mask is recomputed in backward from its counter, so nothing is saved.
struct TokenHeadSpec {
  float dropout;
  LinearSpec out;
  uint64_t stream;
};

template <typename T>
void token_head_forward(const TokenHeadSpec& s, Flat<T> f, const T* h, int N, const DropoutCtx& drop,
                        Buffer<T>& scratch, T* logits);
// dh [N, C] is written.
template <typename T>
void token_head_backward(const TokenHeadSpec& s, Flat<T> f, const T* h, int N, const DropoutCtx& drop,
                         const T* dlogits, T* dh, Buffer<T>& scratch);

}  // namespace strata::nn
