#include "train/memory_report.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "util/resident_memory.h"

namespace strata {

namespace {
double mib(size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }
}  // namespace

MemoryReport::MemoryReport(const Model<float>& model, nn::ActivationPolicy policy)
    : model_(model), policy_(std::move(policy)) {
  const MemoryEstimate held = estimate_training_memory(model_, 1, 1, policy_);
  const size_t buffers = held.parameters + held.gradients + held.optimizer_state;
  const size_t now = resident_memory().now;
  before_training_ = now > buffers ? now - buffers : 0;
}

void MemoryReport::saw_batch(int B, int T) {
  B_ = std::max(B_, B);
  T_ = std::max(T_, T);
}

MemoryEstimate MemoryReport::estimate() const { return estimate_training_memory(model_, B_, T_, policy_); }

std::string MemoryReport::plan() const {
  char head[200];
  std::snprintf(head, sizeof head, "memory per rank (estimate, fp32, batch %d x %d, activations %s):\n", B_, T_,
                policy_.describe().c_str());
  return head + format_memory_estimate(estimate());
}

std::string MemoryReport::measured(size_t offload_pool_bytes, bool evaluated) const {
  const MemoryEstimate e = estimate();
  const size_t step = evaluated ? e.total_with_evaluation() : e.total();
  const size_t predicted = before_training_ + step;
  const size_t peak = resident_memory().peak;
  char line[400];
  std::snprintf(line, sizeof line,
                "peak resident memory %.1f MiB measured (VmHWM); predicted %.1f MiB = %.1f estimate at batch %d x %d%s "
                "+ %.1f held before training (code, libraries, data): measured/predicted %.3f; offload pool %.1f MiB",
                mib(peak), mib(predicted), mib(step), B_, T_, evaluated ? " with evaluation" : "", mib(before_training_),
                predicted ? static_cast<double>(peak) / predicted : 0.0, mib(offload_pool_bytes));
  return line;
}

}  // namespace strata
