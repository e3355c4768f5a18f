// Learning-rate schedules with Hugging Face transformers v4.36 semantics (get_scheduler in
// optimization.py, as Trainer.create_scheduler calls it: no lr_scheduler_kwargs). HF wraps a
// multiplier in torch's LambdaLR, so the rate for an optimizer update is
//   base_lr * multiplier(k),  k = number of optimizer steps already taken (0 for the first).
// lr_at is a pure function of k, so a run resumed at step k continues exactly.
#pragma once
#include <cstdint>
#include <string>

namespace strata {

class LRScheduler {
 public:
  // type: linear | cosine | cosine_with_restarts | polynomial | constant | constant_with_warmup |
  // inverse_sqrt. total_steps is ignored by constant, constant_with_warmup and inverse_sqrt.
  // Throws strata::Error for an unknown type, negative counts, or (polynomial) base_lr <= 1e-7.
  LRScheduler(std::string type, double base_lr, int64_t warmup_steps, int64_t total_steps);

  // The learning rate after `step` optimizer steps (step >= 0).
  double lr_at(int64_t step) const;

  const std::string& type() const { return type_; }
  double base_lr() const { return base_lr_; }
  int64_t warmup_steps() const { return warmup_; }
  int64_t total_steps() const { return total_; }

 private:
  // HF's LambdaLR lambda: lr_at(step) / base_lr.
  double multiplier(int64_t step) const;

  enum class Kind { Linear, Cosine, CosineWithRestarts, Polynomial, Constant, ConstantWithWarmup, InverseSqrt };
  std::string type_;
  Kind kind_;
  double base_lr_;
  int64_t warmup_, total_;
};

// TrainingArguments.get_warmup_steps: warmup_steps when >= 1 (its integer part), a ratio of
// the total when in (0, 1) (transformers 5, which dropped warmup_ratio), else
// ceil(total * warmup_ratio) (transformers 4). Computed in double like Python, so e.g. ratio 0.07
// of 100 steps gives 8 (7.000000000000001).
int64_t warmup_steps_from(double warmup_ratio, double warmup_steps, int64_t total_steps);

}  // namespace strata
