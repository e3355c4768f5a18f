// The one interface through which the Trainer, checkpoints, the CLI, the memory estimate
// and (later) pipeline stages see a model. Each architecture implements it in its own folder
// under models/ and is found through the registry (models/registry.h) by HF model_type.
//
// A model is a sequence of layer *units*: unit 0 is the embeddings, units 1..num_blocks()
// the transformer blocks, unit num_blocks()+1 the task head. forward and backward run any
// contiguous range of units with state the caller owns (ModelState), so a pipeline stage
// runs "units i..j" on its micro-batches; a range that does not start at the embeddings
// takes the hidden state entering it (the *boundary*), and a backward that does not end at
// the head takes the gradient of its output. The state keeps each range's input apart from
// the units' saved tensors, so dropping the saved tensors (activation checkpointing) never
// loses the boundary. A boundary is the hidden state [B*T, hidden_width()], but for an
// encoder-decoder's decoder side, which hands on the encoder's output with it
// (boundary_values).
//
// Parameters and gradients live in one flat buffer each, described by the table with HF
// names (DESIGN.md principle 5).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/batch.h"
#include "models/batch_inputs.h"
#include "models/config.h"
#include "models/param_table.h"
#include "nn/activation_policy.h"
#include "nn/flat.h"
#include "nn/tensor_group.h"
#include "nn/vocab_parallel.h"
#include "tensor/buffer.h"

namespace strata {

template <typename T>
class CausalDecoder;  // models/causal_decoder.h

struct LossResult {
  double loss;  // sum of per-label losses / norm
  double norm;
};

// Units [begin, end) of a model.
struct UnitRange {
  int begin, end;
  bool contains(int unit) const { return unit >= begin && unit < end; }
};

// Caller-owned state of forward passes: saved tensors per unit, the hidden state entering a
// range, logits and their gradient, backward scratch. Each architecture derives its own.
class ModelState {
 public:
  virtual ~ModelState() = default;
  // Bytes of the offload pool's file (nn::ActivationPolicy::offload), 0 without offloading.
  virtual size_t offload_pool_bytes() const { return 0; }

  // Where backward accumulates the parameter gradients of this state's batch: null for the
  // model's grads(), else a buffer of as many values of the model's element type that the
  // caller owns (a replica thread's, train/pipeline_step.h). Model<T>::gradients_of reads it.
  void* own_gradients = nullptr;

  // The batch of the last forward (or infer), where the ops read it.
  BatchInputs inputs;
};

// One named output of the head, as HF names it ("logits"; "start_logits" / "end_logits"
// for question answering; "prediction_logits" / "sop_logits" for ALBERT pretraining).
template <typename T>
struct HeadOutput {
  std::string name;
  std::vector<int64_t> shape;
  const T* data;
};

// The outputs where the host reads them (metrics, files): themselves on the CPU; on a GPU
// copies, kept in `storage`.
template <typename T>
std::vector<HeadOutput<T>> outputs_on_host(std::vector<HeadOutput<T>> outputs, std::vector<std::vector<T>>& storage) {
  if (!kernels::on_cuda()) return outputs;
  storage.resize(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    size_t n = 1;
    for (int64_t d : outputs[i].shape) n *= static_cast<size_t>(d);
    outputs[i].data = host_view(outputs[i].data, n, storage[i]);
  }
  return outputs;
}

// Called as backward proceeds: every gradient at flat offset >= the argument is final (data
// parallelism starts reducing those buckets while backward continues).
using GradsFinalHook = std::function<void(size_t)>;

// Which entries of the parameter table a process keeps (a pipeline stage: the parameters it
// owns and the shared ones it borrows, PipelineStages::keeps); an empty filter keeps all. What
// it does not keep is never written, so it costs no memory (kernels/reserved_memory.h).
using EntryFilter = std::function<bool(size_t entry)>;

template <typename T>
class Model {
 public:
  virtual ~Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const { return cfg_; }
  const ParamTable& table() const { return table_; }
  Buffer<T>& params() { return params_; }
  const Buffer<T>& params() const { return params_; }
  Buffer<T>& grads() { return grads_; }
  const Buffer<T>& grads() const { return grads_; }
  // The names HF may also store for tied parameters (e.g. cls.predictions.decoder.weight,
  // lm_head.weight), each with the table name it aliases.
  const std::vector<std::pair<std::string, std::string>>& tied_aliases() const { return aliases_; }
  // Checkpoint tensors HF drops silently on load (its _keys_to_ignore_on_load_unexpected):
  // neither used nor reported as unexpected.
  const std::vector<std::string>& ignored_on_load() const { return ignored_on_load_; }

  // Tensor parallelism: config().tensor_split says which slice of each split parameter this
  // model holds (ParamEntry::split_dim); the group's collectives come from the caller (train/
  // binds them to the tensor-parallel communicator) and must be set before any pass runs.
  const TensorSplit& tensor_split() const { return cfg_.tensor_split; }
  void set_tensor_group(nn::TensorGroup<T> group) { tp_ = std::move(group); }

  // HF's _init_weights for this architecture: deterministic in (seed, parameter), any thread
  // count; a tensor-parallel slice gets its part of the unsplit tensor's values.
  void init_weights(uint64_t seed, const EntryFilter& keep = {});
  void init_parameter(std::string_view name, uint64_t seed);  // one tensor, same rule and stream

  // True for parameters of the base model (what freeze_base_model freezes, as HF's
  // `model.base_model.requires_grad_(False)` does).
  bool is_base_parameter(const ParamEntry& e) const;
  // Parameters outside the embedding tables: HF's num_parameters(exclude_embeddings=True),
  // which its Trainer counts total_flos with (6 x tokens x this).
  size_t non_embedding_parameters() const;
  // Whether table entry `e` is an embedding table: rows are looked up in it (only a head tied
  // to one multiplies by it).
  bool is_embedding_table(size_t e) const { return init_.at(e).embedding; }

  // ---- layer units ----
  virtual int num_blocks() const = 0;
  int num_units() const { return num_blocks() + 2; }
  int head_unit() const { return num_blocks() + 1; }
  UnitRange all_units() const { return {0, num_units()}; }
  // Table entries (indices into table().entries()) that unit `u` reads. A tied weight is
  // listed under every unit that uses it; a shared block (ALBERT) under every repeat.
  virtual std::vector<size_t> unit_parameters(int u) const = 0;
  // Width of the hidden state between units (per token).
  virtual int hidden_width() const { return cfg_.hidden_size; }
  // Values of the boundary unit `u` hands to unit u+1 (and of its gradient, handed back), for
  // B sequences of T tokens and Td decoder positions: B*T*hidden_width(); an encoder-decoder's
  // decoder side hands on B*(Td+T)*hidden_width().
  virtual size_t boundary_values(int B, int T_, int Td, int u) const;
  // The same for a batch, with the decoder length the model reads from it.
  size_t boundary_values(const Batch& b, int u) const;

  // ---- training passes ----
  // A state for forward / backward / infer; `policy` says how it keeps the blocks' saved
  // tensors (in memory, recomputed, offloaded). Results are the same under every policy.
  std::unique_ptr<ModelState> new_state(const nn::ActivationPolicy& policy = {}) const { return make_state(policy); }
  // Runs units r with dropout `drop`, keeping what backward needs in `state`. `input` is the
  // boundary entering r.begin (boundary_values(b, r.begin - 1); ignored when r.begin == 0; copied).
  // Returns the output of unit r.end-1: the hidden state, or for the head its first output
  // (see head_outputs()).
  virtual const T* forward(const Batch& b, const nn::DropoutCtx& drop, UnitRange r, const T* input,
                           ModelState& state) const = 0;
  // Loss of the last forward through the head; writes d(loss)/d(outputs) into the state.
  // norm <= 0 means this batch's own label_count().
  virtual LossResult loss(const Batch& b, ModelState& state, double norm = 0) const = 0;
  // Accumulates d(loss)/d(params) of units r into grads(). When r includes the head the
  // gradient starts from loss(); otherwise `d_output` is d(loss)/d(output of unit r.end-1).
  // Returns d(loss)/d(input of unit r.begin) (boundary_values(b, r.begin - 1), owned by the
  // state), or null when r.begin == 0.
  virtual const T* backward(const Batch& b, const nn::DropoutCtx& drop, UnitRange r, const T* d_output,
                            ModelState& state, const GradsFinalHook& grads_final = {}) = 0;
  // The head's outputs after a forward (or infer) through the head.
  virtual std::vector<HeadOutput<T>> head_outputs(const Batch& b, const ModelState& state) const = 0;

  // ---- memory ----
  // What a training forward keeps for backward, for a batch of B sequences of length T: the
  // values outside the blocks (embeddings, head), and per block what its backward reads
  // besides its input (`block_saved`, with its product inputs) and the hidden state passed
  // between blocks (`boundary`).
  // `blocks` counts layer applications (ALBERT repeats a shared layer). An encoder-decoder's
  // `blocks` are its encoder's; its decoder's follow, with their own terms.
  struct ActivationTerms {
    size_t outside;
    nn::BlockSaved block_saved;
    size_t boundary;
    int blocks;
    nn::BlockSaved decoder_saved = {};
    size_t decoder_boundary = 0;
    int decoder_blocks = 0;
  };
  virtual ActivationTerms activation_terms(int B, int T_) const = 0;
  // The values a state of `policy` holds through a training step over all units: what the
  // buffers above allocate (nn::block_footprint over the blocks, plus the outside terms).
  nn::ActivationFootprint activation_values(int B, int T_, const nn::ActivationPolicy& policy = {}) const;
  // Backward's scratch (the same under every policy), d(loss)/d(outputs) included.
  virtual size_t scratch_values(int B, int T_) const = 0;
  // What loss() writes into the state: d(loss)/d(outputs) (part of scratch_values). An
  // evaluation computes the loss too, on its own batch shape.
  virtual size_t loss_values(int B, int T_) const = 0;
  // What an inference pass gathers besides: under tensor parallelism a language-model head's
  // logits over the whole vocabulary, which evaluation reads (training keeps only its slice).
  size_t gathered_output_values(int B, int T_) const;

  // ---- inference ----
  // Forward without dropout that keeps no per-layer saved state: `state` holds only the
  // buffers one block needs at a time. Returns the same as forward() over all units. It
  // reuses the state's block records: a forward whose backward has not run is lost.
  virtual const T* infer(const Batch& b, ModelState& state) const = 0;
  // Incremental decoding with a key/value cache, for causal LMs of architectures that have
  // one (null otherwise; make_causal_decoder then recomputes through infer). The decoder reads
  // this model, which must outlive it.
  virtual std::unique_ptr<CausalDecoder<T>> new_cached_decoder() const;
  // The same for sequence-to-sequence models, over one source (its token ids, unpadded): the
  // encoder runs once, the decoder keeps its keys and values (make_seq2seq_decoder).
  virtual std::unique_ptr<CausalDecoder<T>> new_cached_seq2seq_decoder(const std::vector<int32_t>& source) const;

  // ---- whole-model conveniences ----
  const T* forward(const Batch& b, const nn::DropoutCtx& drop, ModelState& state) const {
    return forward(b, drop, all_units(), nullptr, state);
  }
  // head_only: stop after the head (a frozen base model needs no gradients below it).
  void backward(const Batch& b, const nn::DropoutCtx& drop, ModelState& state, bool head_only = false,
                const GradsFinalHook& grads_final = {});

 protected:
  explicit Model(const ModelConfig& cfg) : cfg_(cfg) {}
  virtual std::unique_ptr<ModelState> make_state(const nn::ActivationPolicy& policy) const = 0;

  // Table building, in parameter order; each entry gets HF's init rule.
  // Normal: std (< 0: initializer_range); Constant: every value `std` (a gain HF sets to a factor).
  enum class Init { Normal, One, Zero, Constant };
  nn::LinearSpec add_linear(const std::string& name, int in, int out, bool bias = true, double std = -1);
  nn::LayerNormSpec add_layernorm(const std::string& name, int C, double eps);
  // T5LayerNorm's gain, initialised to `gain`.
  nn::RmsNormSpec add_rmsnorm(const std::string& name, int C, double eps, double gain = 1);
  // How a table is cut over the tensor-parallel ranks: not at all, by rows (vocabulary-parallel,
  // nn/vocab_parallel.h) or by columns (T5's position bias, a column per head).
  enum class TableSplit { None, Rows, Columns };
  size_t add_embedding(const std::string& name, int rows, int C, int padding_idx, TableSplit split = TableSplit::None,
                       double std = -1);
  // A Linear (PyTorch layout [out, in]) split over the tensor-parallel ranks, Megatron-style:
  // column-parallel cuts the outputs (W's rows and the bias), row-parallel the inputs (W's
  // columns; every rank holds the whole bias, added once after the sum). The spec's in / out are
  // this rank's. Unsplit, add_linear.
  nn::LinearSpec add_split_linear(const std::string& name, int in, int out, bool column, bool bias = true,
                                  double std = -1);
  size_t add_param(const std::string& name, std::vector<int64_t> shape, bool no_decay, Init init, double std = -1);
  // A parameter split over the tensor-parallel ranks (ParamTable::add_split); `shape` is HF's.
  size_t add_split_param(const std::string& name, std::vector<int64_t> shape, bool no_decay, Init init, int split_dim,
                         int parts = 1, double std = -1);
  // The entries added to the table since `first` (a layer unit's parameters, as a model closes
  // each unit while it builds); `first` moves past them.
  std::vector<size_t> entries_since(size_t& first) const {
    std::vector<size_t> ids;
    for (; first < table_.entries().size(); ++first) ids.push_back(first);
    return ids;
  }
  // The flat buffers with the tensor-parallel group, for the layers.
  nn::Flat<T> flat_for_forward() const { return {params_.data(), nullptr, tp_group()}; }
  // Backward's: gradients into the state's own buffer when it names one (ModelState::own_gradients).
  nn::Flat<T> flat_for_backward(ModelState& state) { return {params_.data(), gradients_of(state), tp_group()}; }
  T* gradients_of(ModelState& state) {
    return state.own_gradients ? static_cast<T*>(state.own_gradients) : grads_.data();
  }
  const nn::TensorGroup<T>* tp_group() const { return tp_.split() ? &tp_ : nullptr; }
  // This rank's rows of a vocabulary-parallel table (all of them unsplit), nn/vocab_parallel.h.
  nn::VocabSlice vocab_slice() const;
  // Logits over the whole vocabulary from this rank's columns [N, V/P]: `logits` itself unsplit,
  // else every rank's gathered into `whole` [N, V] (a collective over the tensor group).
  const T* whole_vocabulary(const T* logits, int N, Buffer<T>& whole) const;
  // Sizes and zeroes the flat buffers once the table is complete.
  void allocate();

  ModelConfig cfg_;
  ParamTable table_;
  std::vector<std::pair<std::string, std::string>> aliases_;
  std::vector<std::string> ignored_on_load_;
  Buffer<T> params_, grads_;
  nn::TensorGroup<T> tp_;

 private:
  struct InitRule {
    Init kind;
    int padding_row;  // -1: none
    double std;       // for Normal (< 0: initializer_range); the value for Constant
    bool embedding;   // an embedding table (add_embedding)
  };
  std::vector<InitRule> init_;  // parallel to table_.entries()
};

}  // namespace strata
