#include "models/model.h"

#include "models/causal_decoder.h"
#include "models/decoder_inputs.h"
#include "kernels/device.h"

#include "util/rng.h"

namespace strata {

template <typename T>
size_t Model<T>::add_param(const std::string& name, std::vector<int64_t> shape, bool no_decay, Init init,
                           double std) {
  const size_t off = table_.add(name, std::move(shape), no_decay);
  init_.push_back({init, -1, std, false});
  return off;
}

template <typename T>
size_t Model<T>::add_split_param(const std::string& name, std::vector<int64_t> shape, bool no_decay, Init init,
                                 int split_dim, int parts, double std) {
  const size_t off = table_.add_split(name, std::move(shape), no_decay, split_dim, parts, cfg_.tensor_split.degree);
  init_.push_back({init, -1, std, false});
  return off;
}

template <typename T>
nn::LinearSpec Model<T>::add_linear(const std::string& name, int in, int out, bool bias, double std) {
  nn::LinearSpec s{};
  s.w = add_param(name + ".weight", {out, in}, false, Init::Normal, std);
  s.b = bias ? add_param(name + ".bias", {out}, true, Init::Zero) : nn::LinearSpec::kNoBias;
  s.in = in;
  s.out = out;
  return s;
}

template <typename T>
nn::LayerNormSpec Model<T>::add_layernorm(const std::string& name, int C, double eps) {
  nn::LayerNormSpec s{};
  s.gamma = add_param(name + ".weight", {C}, true, Init::One);
  s.beta = add_param(name + ".bias", {C}, true, Init::Zero);
  s.C = C;
  s.eps = eps;
  return s;
}

template <typename T>
nn::RmsNormSpec Model<T>::add_rmsnorm(const std::string& name, int C, double eps, double gain) {
  nn::RmsNormSpec s{};
  s.gamma = gain == 1 ? add_param(name + ".weight", {C}, true, Init::One)
                      : add_param(name + ".weight", {C}, true, Init::Constant, gain);
  s.C = C;
  s.eps = eps;
  return s;
}

template <typename T>
nn::LinearSpec Model<T>::add_split_linear(const std::string& name, int in, int out, bool column, bool bias,
                                          double std) {
  const int P = cfg_.tensor_split.degree;
  nn::LinearSpec s{};
  s.w = add_split_param(name + ".weight", {out, in}, false, Init::Normal, column ? 0 : 1, 1, std);
  s.b = bias ? add_split_param(name + ".bias", {out}, true, Init::Zero, column ? 0 : -1) : nn::LinearSpec::kNoBias;
  s.in = column ? in : in / P;
  s.out = column ? out / P : out;
  return s;
}

template <typename T>
size_t Model<T>::add_embedding(const std::string& name, int rows, int C, int padding_idx, TableSplit split,
                               double std) {
  const int split_dim = split == TableSplit::Rows ? 0 : split == TableSplit::Columns ? 1 : -1;
  const size_t off = add_split_param(name + ".weight", {rows, C}, false, Init::Normal, split_dim, 1, std);
  init_.back().padding_row = padding_idx;
  init_.back().embedding = true;
  return off;
}

template <typename T>
size_t Model<T>::non_embedding_parameters() const {
  size_t n = table_.total();
  for (size_t i = 0; i < init_.size(); ++i)
    if (init_[i].embedding) n -= table_.entries()[i].numel;
  return n;
}

template <typename T>
void Model<T>::allocate() {
  // Values that read as zero and cost no memory until used: a pipeline stage loads only its
  // window of the parameters (EntryFilter) and uses only its window of the gradients, and an
  // inference never touches the gradients. On a GPU a parameter is backed when it is loaded or
  // initialised (a copy backs what it writes), the gradients where a step zeroes them
  // (DataParallelStep).
  params_ = Buffer<T>::reserved(table_.total());
  grads_ = Buffer<T>::reserved(table_.total());
}

template <typename T>
void Model<T>::init_parameter(std::string_view name, uint64_t seed) {
  const ParamEntry& e = table_.at(name);
  const size_t idx = static_cast<size_t>(&e - table_.entries().data());
  const InitRule& rule = init_[idx];
  // A tensor-parallel slice draws the unsplit tensor and keeps its part: the values do not
  // depend on the split. The host draws them (into the parameter itself on the CPU).
  const bool split = !e.replicated() && cfg_.tensor_split.split();
  std::vector<T> whole(split ? global_numel(e) : 0);
  StagedWrite<T> param(params_, e.offset, e.numel);
  T* p = split ? whole.data() : param.data();
  const size_t n = split ? whole.size() : e.numel;
  switch (rule.kind) {
    case Init::One: std::fill_n(p, n, T(1)); break;
    case Init::Zero: std::fill_n(p, n, T(0)); break;
    case Init::Constant: std::fill_n(p, n, static_cast<T>(rule.std)); break;
    case Init::Normal: {
      const CounterRng rng(seed, idx);
      const double std = rule.std >= 0 ? rule.std : cfg_.initializer_range;
#pragma omp parallel for schedule(static)
      for (size_t i = 0; i < n; ++i) p[i] = static_cast<T>(rng.normal(i) * std);
      if (rule.padding_row >= 0) {
        const size_t cols = static_cast<size_t>(e.global_shape[1]);
        std::fill_n(p + rule.padding_row * cols, cols, T(0));
      }
      break;
    }
  }
  if (split) take_slice(e, cfg_.tensor_split, whole.data(), param.data());
  param.upload();
}

template <typename T>
void Model<T>::init_weights(uint64_t seed, const EntryFilter& keep) {
  const auto& entries = table_.entries();
  for (size_t i = 0; i < entries.size(); ++i)
    if (!keep || keep(i)) init_parameter(entries[i].name, seed);
}

template <typename T>
bool Model<T>::is_base_parameter(const ParamEntry& e) const {
  return cfg_.task == Task::Base || e.name.starts_with(cfg_.base_prefix());
}

template <typename T>
void Model<T>::backward(const Batch& b, const nn::DropoutCtx& drop, ModelState& state, bool head_only,
                        const GradsFinalHook& grads_final) {
  const UnitRange r = head_only ? UnitRange{head_unit(), num_units()} : all_units();
  backward(b, drop, r, nullptr, state, grads_final);
  if (head_only && grads_final) grads_final(0);  // nothing below the head gets a gradient
}

template <typename T>
nn::ActivationFootprint Model<T>::activation_values(int B, int T_, const nn::ActivationPolicy& policy) const {
  const ActivationTerms t = activation_terms(B, T_);
  nn::ActivationFootprint f = nn::block_footprint(policy, 0, t.blocks, t.block_saved, t.boundary);
  f += nn::block_footprint(policy, t.blocks, t.blocks + t.decoder_blocks, t.decoder_saved, t.decoder_boundary);
  f.resident += t.outside;
  return f;
}

template <typename T>
size_t Model<T>::boundary_values(int B, int T_, int /*Td*/, int /*u*/) const {
  return static_cast<size_t>(B) * T_ * static_cast<size_t>(hidden_width());
}

template <typename T>
size_t Model<T>::boundary_values(const Batch& b, int u) const {
  return boundary_values(b.B, b.T, decoder_length(cfg_, b), u);
}

template <typename T>
size_t Model<T>::gathered_output_values(int B, int T_) const {
  const bool lm = vocab_logits(cfg_.task);
  return tensor_split().degree > 1 && lm ? static_cast<size_t>(B) * T_ * cfg_.vocab_size : 0;
}

template <typename T>
nn::VocabSlice Model<T>::vocab_slice() const {
  const int P = cfg_.tensor_split.degree;
  return {cfg_.tensor_split.rank * (cfg_.vocab_size / P), cfg_.vocab_size / P};
}

template <typename T>
const T* Model<T>::whole_vocabulary(const T* logits, int N, Buffer<T>& whole) const {
  if (!tp_group()) return logits;
  whole.resize(static_cast<size_t>(N) * cfg_.vocab_size);
  nn::vocab_parallel_gather(vocab_slice(), tp_group(), logits, whole.data(), N, cfg_.vocab_size);
  return whole.data();
}

template <typename T>
std::unique_ptr<CausalDecoder<T>> Model<T>::new_cached_decoder() const {
  return nullptr;
}

template <typename T>
std::unique_ptr<CausalDecoder<T>> Model<T>::new_cached_seq2seq_decoder(const std::vector<int32_t>&) const {
  return nullptr;
}

template class Model<float>;
template class Model<double>;

}  // namespace strata
