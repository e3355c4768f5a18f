// Dynamic loss scaling for fp16 training, with torch.cuda.amp.GradScaler's semantics and
// defaults: the loss (in practice its gradient) is multiplied by `scale` before backward, so
// that small gradients survive fp16's range (the smallest subnormal is 2^-24); gradients are
// divided by it again before clipping and the optimizer step. A step whose gradients hold an
// inf or nan (the scaled values overflowed fp16's 65504) is skipped and the scale halved; after
// growth_interval clean steps in a row it doubles.
#pragma once
#include <cmath>
#include <cstdint>

namespace strata {

// Loss scales must be powers of two: scaling and unscaling are then exact.
inline bool is_power_of_two(double x) {
  int exponent = 0;
  return x > 0 && std::frexp(x, &exponent) == 0.5;
}

struct LossScalerState {
  double scale = 65536;        // GradScaler's init_scale, 2^16
  int64_t growth_tracker = 0;  // clean steps since the scale last changed
  int64_t skipped_steps = 0;   // steps skipped for inf / nan gradients, over the whole run
};

class LossScaler {
 public:
  // Disabled (bf16, fp32): scale 1, nothing is ever skipped. init_scale must be a power of two,
  // so that scaling and unscaling are exact.
  LossScaler(bool enabled, double init_scale, int64_t growth_interval);
  bool enabled() const { return enabled_; }
  double scale() const { return enabled_ ? state_.scale : 1.0; }
  // After a step's gradients are known: false (skip the optimizer step) when they are not all
  // finite. Updates the scale as GradScaler.update does: x0.5 on a skip, x2 after
  // growth_interval clean steps.
  bool step_ok(bool gradients_finite);
  const LossScalerState& state() const { return state_; }
  void restore(const LossScalerState& s) { state_ = s; }

  // Below this the scale has backed off 40 times from 2^16: the forward pass itself overflows
  // fp16 (no scale helps), and training stops with an error instead of skipping forever.
  static constexpr double kMinScale = 0x1p-24;

 private:
  bool enabled_;
  int64_t growth_interval_;
  LossScalerState state_;
};

}  // namespace strata
