// The task heads the encoder families share (BERT, RoBERTa, DistilBERT, ALBERT), run on the
// last hidden state h [B*T, C]: sequence classification, masked LM, token classification
// and question answering, with HF's losses. The architecture builds the specs (its own
// parameter names); this runs them.
#pragma once
#include <vector>

#include "core/batch.h"
#include "models/config.h"
#include "models/model.h"
#include "nn/heads.h"

namespace strata {

template <typename T>
struct EncoderHeadState {
  nn::ClassifierHeadSaved<T> classifier;
  nn::MaskedLMHeadSaved<T> masked_lm;
  Buffer<T> token_logits;               // [N, num_labels] or QA [N, 2]
  Buffer<T> start_logits, end_logits;   // QA, [B*T] each
  Buffer<T> dlogits;                    // d(loss)/d(the head's first output)
  Buffer<T> gathered_logits;            // masked LM under tensor parallelism: every rank's columns (inference)
  nn::VocabParallelCeScratch<T> ce;
  Buffer<T> d_end;                      // QA: d(loss)/d(end_logits)
  DeviceArray<int32_t> start_targets, end_targets;  // QA: the clamped answer positions
  Buffer<T> d_pair;                     // QA: both gradients interleaved as qa_outputs' [N, 2]
  Buffer<T> scratch;
};

struct EncoderHeads {
  Task task = Task::Base;
  nn::ClassifierHeadSpec classifier{};
  nn::MaskedLMHeadSpec masked_lm{};
  nn::TokenHeadSpec token{};  // token classification, or qa_outputs

  // Returns the head's first output (logits, or QA start logits).
  template <typename T>
  const T* forward(const ModelConfig& c, nn::Flat<T> f, const T* h, int B, int T_, const nn::DropoutCtx& drop,
                   EncoderHeadState<T>& s) const;
  // tp: the tensor-parallel group whose vocabulary slice the masked-LM logits are (null: whole).
  template <typename T>
  LossResult loss(const ModelConfig& c, const Batch& b, const BatchInputs& in, EncoderHeadState<T>& s, double norm,
                  const nn::TensorGroup<T>* tp = nullptr) const;
  // dh [B*T, C] is written.
  template <typename T>
  void backward(const ModelConfig& c, nn::Flat<T> f, const T* h, int B, int T_, const nn::DropoutCtx& drop,
                EncoderHeadState<T>& s, T* dh) const;
  template <typename T>
  std::vector<HeadOutput<T>> outputs(const ModelConfig& c, const Batch& b, const EncoderHeadState<T>& s) const;
};

// Sequence classification's loss per problem type, as HF's *ForSequenceClassification
// computes it (cross entropy, MSE or BCE-with-logits) on logits [B, num_labels]; writes
// dlogits. Shared by every architecture with a sequence-classification head.
template <typename T>
LossResult sequence_classification_loss(const ModelConfig& c, const Batch& b, const BatchInputs& in, const T* logits,
                                        Buffer<T>& dlogits, double norm);

// Question answering's loss as HF computes it: positions are clamped to [0, T], position T
// is ignored, and the loss is the mean of the start and end cross entropies. Writes the
// gradients of both logit rows [B, T]. `start` / `end` take the clamped targets where the ops
// read them.
template <typename T>
double span_loss(const T* start_logits, const T* end_logits, const Batch& b, DeviceArray<int32_t>& start,
                 DeviceArray<int32_t>& end, T* d_start, T* d_end, double norm);

}  // namespace strata
