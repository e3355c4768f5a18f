// The memory plan a training job prints when it starts, and the measured peak it prints when
// training ends (issue 9, item 7): models/memory_estimate.h's figures at the largest batch
// shape seen, plus what the process held before training besides the estimated buffers (code,
// libraries, data), against the kernel's count of the resident peak (VmHWM).
#pragma once
#include <cstddef>
#include <string>

#include "models/memory_estimate.h"
#include "nn/activation_policy.h"

namespace strata {

class MemoryReport {
 public:
  // Construct just before the first step, once parameters, gradients and optimizer state are
  // allocated and touched: they are in the resident set now and in the estimate too.
  MemoryReport(const Model<float>& model, nn::ActivationPolicy policy);
  void saw_batch(int B, int T);
  // "memory per rank (estimate, ...)" and its lines, at the largest shape seen so far.
  std::string plan() const;
  // One line: the measured peak against the prediction (and the offload pool's size).
  std::string measured(size_t offload_pool_bytes, bool evaluated) const;

 private:
  MemoryEstimate estimate() const;

  const Model<float>& model_;
  nn::ActivationPolicy policy_;
  size_t before_training_ = 0;  // resident bytes outside the estimate
  int B_ = 0, T_ = 0;
};

}  // namespace strata
