#include "train/loss_scaler.h"

#include "util/error.h"

namespace strata {

LossScaler::LossScaler(bool enabled, double init_scale, int64_t growth_interval)
    : enabled_(enabled), growth_interval_(growth_interval) {
  STRATA_CHECK(is_power_of_two(init_scale), "the initial loss scale ", init_scale, " is not a power of two");
  STRATA_CHECK(growth_interval > 0, "the loss scale's growth interval must be positive, got ", growth_interval);
  state_.scale = init_scale;
}

bool LossScaler::step_ok(bool gradients_finite) {
  if (!enabled_) return true;
  if (!gradients_finite) {
    state_.scale *= 0.5;  // GradScaler's backoff_factor
    state_.growth_tracker = 0;
    ++state_.skipped_steps;
    if (state_.scale < kMinScale)
      fail("fp16: the loss scale fell to ", state_.scale, " after ", state_.skipped_steps,
           " skipped steps: the forward pass overflows fp16 (65504) whatever the scale. Train in bf16 (same range as "
           "fp32) or fp32");
    return false;
  }
  if (++state_.growth_tracker == growth_interval_) {
    state_.scale *= 2.0;  // GradScaler's growth_factor
    state_.growth_tracker = 0;
  }
  return true;
}

}  // namespace strata
