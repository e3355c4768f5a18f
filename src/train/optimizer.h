// Optimizers over the flat parameter / gradient buffers. State (Adam's m and v, SGD's
// momentum) is one flat buffer per kind, indexed like the parameters; the update runs
// fused over contiguous runs of parameters that share a weight-decay setting.
//
// An optimizer may own only a slice [begin, end) of the flat buffers (ZeRO: this rank's
// slice): it updates those parameters only and keeps state for them only, indexed from
// `begin`. The update is element-wise, so slices reproduce the whole-buffer update exactly.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "kernels/ops.h"
#include "models/param_table.h"
#include "tensor/buffer.h"

namespace strata {

struct OptimizerConfig {
  std::string name = "adamw";  // "adamw" | "sgd"
  double lr = 1e-3;
  double weight_decay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;       // AdamW
  double momentum = 0.0, dampening = 0.0;             // SGD
  bool nesterov = false;
  // HF Trainer's grouping: no decay on biases and LayerNorm weights. Off = decay everything
  // (plain torch.optim semantics).
  bool exclude_bias_and_norm_from_decay = false;
};

template <typename T>
class Optimizer {
 public:
  // [begin, end): the slice of the flat buffers this optimizer owns (clamped to the table).
  Optimizer(const OptimizerConfig& cfg, const ParamTable& table, size_t begin = 0,
            size_t end = std::numeric_limits<size_t>::max());
  // One update with the current learning rate `lr` (schedulers change it per step). params
  // and grads are the whole flat buffers; only the owned slice is read and written.
  void step(T* params, const T* grads, double lr);
  size_t begin() const { return begin_; }
  size_t end() const { return end_; }
  int64_t steps_taken() const { return step_; }
  void set_steps_taken(int64_t steps) { step_ = steps; }  // when resuming from a checkpoint
  const OptimizerConfig& config() const { return cfg_; }
  // The state buffers, indexed like the parameters from begin(), with the names PyTorch's
  // optimizers give them: AdamW {exp_avg, exp_avg_sq}; SGD {momentum_buffer}.
  std::vector<std::pair<std::string, Buffer<T>*>> state_buffers();
  // Parameters (by table entry index) the update skips, e.g. a frozen base model.
  void set_frozen(std::vector<bool> frozen) { frozen_ = std::move(frozen); }

 private:
  OptimizerConfig cfg_;
  const ParamTable& table_;
  size_t begin_, end_;
  Buffer<T> m_, v_;
  int64_t step_ = 0;
  std::vector<bool> frozen_;
};

}  // namespace strata
