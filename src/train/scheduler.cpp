#include "train/scheduler.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numbers>
#include <utility>

#include "util/error.h"

namespace strata {
namespace {

// get_scheduler's defaults when Trainer passes no lr_scheduler_kwargs.
constexpr double kCosineCycles = 0.5;       // cosine: half a wave, from 1 down to 0
constexpr double kRestartCycles = 1.0;      // cosine_with_restarts: one hard restart cycle
constexpr double kPolyLrEnd = 1e-7;         // polynomial: absolute end lr, not a fraction
constexpr double kPolyPower = 1.0;
constexpr int64_t kInverseSqrtTimescale = 10000;  // inverse_sqrt when warmup is 0

constexpr const char* kValidTypes =
    "linear, cosine, cosine_with_restarts, polynomial, constant, constant_with_warmup, inverse_sqrt";

}  // namespace

LRScheduler::LRScheduler(std::string type, double base_lr, int64_t warmup_steps, int64_t total_steps)
    : type_(std::move(type)), base_lr_(base_lr), warmup_(warmup_steps), total_(total_steps) {
  if (type_ == "linear") kind_ = Kind::Linear;
  else if (type_ == "cosine") kind_ = Kind::Cosine;
  else if (type_ == "cosine_with_restarts") kind_ = Kind::CosineWithRestarts;
  else if (type_ == "polynomial") kind_ = Kind::Polynomial;
  else if (type_ == "constant") kind_ = Kind::Constant;
  else if (type_ == "constant_with_warmup") kind_ = Kind::ConstantWithWarmup;
  else if (type_ == "inverse_sqrt") kind_ = Kind::InverseSqrt;
  else fail("lr_scheduler_type '", type_, "' is not supported; expected one of: ", kValidTypes);
  STRATA_CHECK(warmup_ >= 0, "lr scheduler: warmup_steps must be >= 0, got ", warmup_);
  STRATA_CHECK(total_ >= 0, "lr scheduler: total_steps must be >= 0, got ", total_);
  // HF raises the same way: the decay is defined relative to base_lr and must go down.
  if (kind_ == Kind::Polynomial && !(base_lr_ > kPolyLrEnd))
    fail("lr scheduler polynomial: lr_end (", kPolyLrEnd, ") must be smaller than the learning rate (", base_lr_, ")");
}

double LRScheduler::lr_at(int64_t step) const {
  // Same operation order as LambdaLR (base_lr * lambda) so results match HF bit for bit.
  return base_lr_ * multiplier(step);
}

// Each branch transcribes HF's lambda, including its integer/float mix: Python's int / int is a
// correctly rounded double division, as is double(a) / double(b) for counts below 2^53.
double LRScheduler::multiplier(int64_t step) const {
  assert(step >= 0);
  const auto d = [](int64_t v) { return static_cast<double>(v); };
  // Every type but constant ramps 0 -> 1 over the warmup, whatever total_steps is.
  if (kind_ != Kind::Constant && step < warmup_) return d(step) / d(std::max<int64_t>(1, warmup_));
  // Fraction of the post-warmup span done; may exceed 1 past total_steps.
  const double progress = d(step - warmup_) / d(std::max<int64_t>(1, total_ - warmup_));
  switch (kind_) {
    case Kind::Linear:
      return std::max(0.0, d(total_ - step) / d(std::max<int64_t>(1, total_ - warmup_)));
    case Kind::Cosine:
      // Not clamped past total_steps: for progress in (1, 2) the half-cosine climbs back up
      // (HF's max(0, .) never bites because 0.5 * (1 + cos) >= 0).
      return std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * kCosineCycles * 2.0 * progress)));
    case Kind::CosineWithRestarts:
      if (progress >= 1.0) return 0.0;
      return std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * std::fmod(kRestartCycles * progress, 1.0))));
    case Kind::Polynomial: {
      // HF works in absolute lr (decaying from base_lr to lr_end) and divides by base_lr, because
      // LambdaLR multiplies back; hence the lr_end / base_lr terms.
      if (step > total_) return kPolyLrEnd / base_lr_;
      const int64_t decay_steps = total_ - warmup_;
      // warmup == total at step == total: HF divides 0 by 0 (ZeroDivisionError). The end value is
      // what HF returns one step later, and the only sensible limit.
      if (decay_steps == 0) return kPolyLrEnd / base_lr_;
      const double pct_remaining = 1.0 - d(step - warmup_) / d(decay_steps);
      const double decay = (base_lr_ - kPolyLrEnd) * std::pow(pct_remaining, kPolyPower) + kPolyLrEnd;
      return decay / base_lr_;
    }
    case Kind::Constant:
    case Kind::ConstantWithWarmup:
      return 1.0;
    case Kind::InverseSqrt: {
      // v4.36 uses timescale = warmup, which divides by zero when warmup is 0; v4.39 changed it
      // to `warmup or 10000`, which is what we do.
      const int64_t timescale = warmup_ > 0 ? warmup_ : kInverseSqrtTimescale;
      const int64_t shift = timescale - warmup_;
      return 1.0 / std::sqrt(d(step + shift) / d(timescale));
    }
  }
  return 1.0;  // unreachable: every Kind is handled above
}

int64_t warmup_steps_from(double warmup_ratio, double warmup_steps, int64_t total_steps) {
  if (warmup_steps >= 1) return static_cast<int64_t>(warmup_steps);
  const double ratio = warmup_steps > 0 ? warmup_steps : warmup_ratio;
  return static_cast<int64_t>(std::ceil(static_cast<double>(total_steps) * ratio));
}

}  // namespace strata
