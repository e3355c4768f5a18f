#include "models/encoder_heads.h"

#include <algorithm>

#include "models/batch_checks.h"
#include "util/error.h"

namespace strata {

namespace {

// HF clamps answer positions to [0, T] and ignores position T (ignore_index = T).
std::vector<int32_t> clamped_span_targets(const std::vector<int32_t>& pos, int T_) {
  std::vector<int32_t> out(pos.size());
  for (size_t i = 0; i < pos.size(); ++i) {
    const int32_t p = std::clamp<int32_t>(pos[i], 0, T_);
    out[i] = p == T_ ? -100 : p;
  }
  return out;
}

double labelled(const std::vector<int32_t>& targets) {
  return static_cast<double>(std::count_if(targets.begin(), targets.end(), [](int32_t t) { return t != -100; }));
}

}  // namespace

template <typename T>
double span_loss(const T* start_logits, const T* end_logits, const Batch& b, DeviceArray<int32_t>& start,
                 DeviceArray<int32_t>& end, T* d_start, T* d_end, double norm) {
  if (b.start_positions.size() != static_cast<size_t>(b.B) || b.end_positions.size() != static_cast<size_t>(b.B))
    fail("question-answering loss: the batch needs start_positions and end_positions, one per row");
  start.host() = clamped_span_targets(b.start_positions, b.T);
  end.host() = clamped_span_targets(b.end_positions, b.T);
  // (mean start CE + mean end CE) / 2; with a global norm both means share it.
  const double n_start = norm > 0 ? norm : std::max(1.0, labelled(start.host()));
  const double n_end = norm > 0 ? norm : std::max(1.0, labelled(end.host()));
  return kernels::cross_entropy(start_logits, start.upload(), d_start, b.B, b.T, 2 * n_start) +
         kernels::cross_entropy(end_logits, end.upload(), d_end, b.B, b.T, 2 * n_end);
}

template <typename T>
LossResult sequence_classification_loss(const ModelConfig& c, const Batch& b, const BatchInputs& in, const T* logits,
                                        Buffer<T>& dlogits, double norm) {
  const size_t n = static_cast<size_t>(b.B) * c.num_labels;
  dlogits.resize(n);
  T* d = dlogits.data();
  switch (resolve_problem_type(c, b)) {
    case ProblemType::SingleLabel:
      if (b.labels.empty()) fail("classification loss: the batch has no labels");
      return {kernels::cross_entropy(logits, in.labels, d, b.B, c.num_labels, norm), norm};
    case ProblemType::Regression:
      if (b.float_labels.empty()) fail("regression loss: the batch has no targets");
      return {kernels::mse(logits, in.float_labels, d, n, norm), norm};
    case ProblemType::MultiLabel:
      if (b.float_labels.empty()) fail("multi-label loss: the batch has no targets");
      return {kernels::bce_with_logits(logits, in.float_labels, d, n, norm), norm};
    case ProblemType::Unset: break;
  }
  fail("classification loss: the problem type is unresolved");
}

template <typename T>
const T* EncoderHeads::forward(const ModelConfig& c, nn::Flat<T> f, const T* h, int B, int T_,
                               const nn::DropoutCtx& drop, EncoderHeadState<T>& s) const {
  const int N = B * T_;
  switch (task) {
    case Task::SequenceClassification:
      nn::classifier_head_forward(classifier, f, h, B, T_, drop, s.classifier);
      return s.classifier.logits.data();
    case Task::MaskedLM: {
      nn::masked_lm_head_forward(masked_lm, f, h, N, s.masked_lm);
      // Training never gathers the vocabulary-parallel logits; an inference pass (dropout off)
      // does, for the outputs evaluation and prediction read.
      if (f.tp && f.tp->split() && !drop.active) {
        s.gathered_logits.resize(static_cast<size_t>(N) * c.vocab_size);
        nn::vocab_parallel_gather(masked_lm.vocab, f.tp, s.masked_lm.logits.data(), s.gathered_logits.data(), N,
                                  c.vocab_size);
      }
      return s.masked_lm.logits.data();
    }
    case Task::TokenClassification:
      s.token_logits.resize(static_cast<size_t>(N) * token.out.out);
      nn::token_head_forward(token, f, h, N, drop, s.scratch, s.token_logits.data());
      return s.token_logits.data();
    case Task::QuestionAnswering: {
      s.token_logits.resize(static_cast<size_t>(N) * 2);
      nn::token_head_forward(token, f, h, N, drop, s.scratch, s.token_logits.data());
      s.start_logits.resize(N);
      s.end_logits.resize(N);
      // qa_outputs(h).split(1, dim=-1): the columns of [N, 2]
      kernels::copy_rows(s.token_logits.data(), 2, s.start_logits.data(), 1, N, 1);
      kernels::copy_rows(s.token_logits.data() + 1, 2, s.end_logits.data(), 1, N, 1);
      return s.start_logits.data();
    }
    default: break;
  }
  fail("a ", c.architecture(), " has no task head to run");
}

template <typename T>
LossResult EncoderHeads::loss(const ModelConfig& c, const Batch& b, const BatchInputs& in, EncoderHeadState<T>& s,
                              double norm,
                              const nn::TensorGroup<T>* tp) const {
  if (norm <= 0 && task != Task::QuestionAnswering) norm = std::max(1.0, label_count(c, b));
  const int N = b.B * b.T;
  switch (task) {
    case Task::MaskedLM:
    case Task::TokenClassification: {
      if (b.labels.size() != static_cast<size_t>(N)) fail(task_name(task), " loss: the batch needs one label per position");
      const int V = task == Task::MaskedLM ? masked_lm.decoder.out : token.out.out;
      const T* logits = task == Task::MaskedLM ? s.masked_lm.logits.data() : s.token_logits.data();
      s.dlogits.resize(static_cast<size_t>(N) * V);
      if (task == Task::MaskedLM && tp && tp->split())
        return {nn::vocab_parallel_cross_entropy(masked_lm.vocab, tp, logits, in.labels, s.dlogits.data(), N,
                                                 norm, s.ce),
                norm};
      return {kernels::cross_entropy(logits, in.labels, s.dlogits.data(), N, V, norm), norm};
    }
    case Task::QuestionAnswering: {
      s.dlogits.resize(N);
      s.d_end.resize(N);
      const double loss = span_loss(s.start_logits.data(), s.end_logits.data(), b, s.start_targets, s.end_targets, s.dlogits.data(),
                                    s.d_end.data(), norm);
      return {loss, norm > 0 ? norm : label_count(c, b)};
    }
    case Task::SequenceClassification:
      return sequence_classification_loss(c, b, in, s.classifier.logits.data(), s.dlogits, norm);
    default: break;
  }
  fail("a ", c.architecture(), " has no task head, so it has no loss; use a model with a task head");
}

template <typename T>
void EncoderHeads::backward(const ModelConfig& c, nn::Flat<T> f, const T* h, int B, int T_,
                            const nn::DropoutCtx& drop, EncoderHeadState<T>& s, T* dh) const {
  const int N = B * T_;
  switch (task) {
    case Task::SequenceClassification:
      nn::classifier_head_backward(classifier, f, B, T_, drop, s.classifier, s.dlogits.data(), dh);
      return;
    case Task::MaskedLM:
      nn::masked_lm_head_backward(masked_lm, f, h, N, s.masked_lm, s.dlogits.data(), dh, s.scratch);
      return;
    case Task::TokenClassification:
      nn::token_head_backward(token, f, h, N, drop, s.dlogits.data(), dh, s.scratch);
      return;
    case Task::QuestionAnswering: {
      s.d_pair.resize(static_cast<size_t>(N) * 2);  // interleave back to qa_outputs' [N, 2]
      kernels::copy_rows(s.dlogits.data(), 1, s.d_pair.data(), 2, N, 1);
      kernels::copy_rows(s.d_end.data(), 1, s.d_pair.data() + 1, 2, N, 1);
      nn::token_head_backward(token, f, h, N, drop, s.d_pair.data(), dh, s.scratch);
      return;
    }
    default: break;
  }
  fail("backward needs a task head (", c.architecture(), " has none)");
}

template <typename T>
std::vector<HeadOutput<T>> EncoderHeads::outputs(const ModelConfig& c, const Batch& b,
                                                 const EncoderHeadState<T>& s) const {
  switch (task) {
    case Task::SequenceClassification: return {{"logits", {b.B, c.num_labels}, s.classifier.logits.data()}};
    case Task::MaskedLM:  // split: the logits an inference pass gathered
      if (s.gathered_logits.size() > 0) return {{"logits", {b.B, b.T, c.vocab_size}, s.gathered_logits.data()}};
      return {{"logits", {b.B, b.T, masked_lm.decoder.out}, s.masked_lm.logits.data()}};
    case Task::TokenClassification: return {{"logits", {b.B, b.T, token.out.out}, s.token_logits.data()}};
    case Task::QuestionAnswering:
      return {{"start_logits", {b.B, b.T}, s.start_logits.data()}, {"end_logits", {b.B, b.T}, s.end_logits.data()}};
    default: return {};
  }
}

#define STRATA_INSTANTIATE(T)                                                                                      \
  template LossResult sequence_classification_loss<T>(const ModelConfig&, const Batch&, const BatchInputs&,         \
                                                      const T*, Buffer<T>&, double);                               \
  template double span_loss<T>(const T*, const T*, const Batch&, DeviceArray<int32_t>&, DeviceArray<int32_t>&, T*, \
                               T*, double);                                                                        \
  template const T* EncoderHeads::forward<T>(const ModelConfig&, nn::Flat<T>, const T*, int, int,                  \
                                             const nn::DropoutCtx&, EncoderHeadState<T>&) const;                   \
  template LossResult EncoderHeads::loss<T>(const ModelConfig&, const Batch&, const BatchInputs&,                  \
                                            EncoderHeadState<T>&, double,                                          \
                                            const nn::TensorGroup<T>*) const;                                      \
  template void EncoderHeads::backward<T>(const ModelConfig&, nn::Flat<T>, const T*, int, int,                     \
                                          const nn::DropoutCtx&, EncoderHeadState<T>&, T*) const;                  \
  template std::vector<HeadOutput<T>> EncoderHeads::outputs<T>(const ModelConfig&, const Batch&,                   \
                                                              const EncoderHeadState<T>&) const;
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

}  // namespace strata
