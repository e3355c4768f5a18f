#include "train/data_parallel_step.h"

#include <algorithm>
#include <cmath>

#include "kernels/ops.h"
#include "tensor/resident_memory.h"
#include "util/error.h"

namespace strata {

DataParallelStep::DataParallelStep(dist::Communicator* comm, Model<float>& model, int zero_stage, double bucket_cap_mb)
    : comm_(comm && comm->size() > 1 ? comm : nullptr),
      model_(model),
      stage_(zero_stage),
      shards_(model.grads().size(), comm_ ? comm_->size() : 1) {
  STRATA_CHECK(zero_stage >= 0 && zero_stage <= 2, "ZeRO stage ", zero_stage, " is not 0, 1 or 2");
  if (!comm_) return;
  const auto cap = static_cast<size_t>(bucket_cap_mb * 1024 * 1024 / sizeof(float));
  Buffer<float>& g = model_.grads();
  reducer_ = std::make_unique<dist::GradientReducer>(*comm_, g.data(), g.size(), cap, stage_ > 0 ? &shards_ : nullptr,
                                                     stage_ == 2);
  if (stage_ == 2) {  // from now on only the owned slice of the gradients is ever non-zero here
    zero_and_release(g.data(), owned_begin() * sizeof(float));
    zero_and_release(g.data() + owned_end(), (g.size() - owned_end()) * sizeof(float));
  }
}

size_t DataParallelStep::owned_begin() const { return sharded() ? shards_.begin(comm_->rank()) : 0; }
size_t DataParallelStep::owned_end() const { return sharded() ? shards_.end(comm_->rank()) : shards_.total(); }

void DataParallelStep::zero_grads() {
  Buffer<float>& g = model_.grads();
  // ZeRO-2: the rest was zeroed (and released) when its buckets were reduced.
  if (stage_ == 2 && comm_)
    std::fill(g.data() + owned_begin(), g.data() + owned_end(), 0.0f);
  else
    g.zero();
}

void DataParallelStep::begin_micro(int i, int n) {
  if (reduces(i, n)) reducer_->begin_step();
}

GradsFinalHook DataParallelStep::hook(int i, int n) {
  if (!reduces(i, n)) return {};
  return [this](size_t offset) {
    if (stage_ == 2) sample_gradient_residency();  // before the bucket is released: the local peak
    reducer_->grads_final_from(offset);
  };
}

void DataParallelStep::end_micro(int i, int n) {
  sample_gradient_residency();
  if (reduces(i, n)) reducer_->finish_step();
}

void DataParallelStep::sample_gradient_residency() {
  const Buffer<float>& g = model_.grads();
  peak_grad_bytes_ = std::max(peak_grad_bytes_, resident_bytes(g.data(), g.size() * sizeof(float)));
}

double DataParallelStep::clip(double max_norm) {
  float* g = model_.grads().data() + owned_begin();
  const size_t n = owned_end() - owned_begin();
  double sq = kernels::sum_squares(g, n);
  if (sharded()) comm_->all_reduce_sum(&sq, 1, "gradient norm");  // each slice holds its part of the sum
  const double norm = std::sqrt(sq);
  if (max_norm > 0) {
    const double coef = max_norm / (norm + 1e-6);
    if (coef < 1) kernels::scale(g, n, static_cast<float>(coef));
  }
  return norm;
}

void DataParallelStep::update(Optimizer<float>& opt, double lr) {
  STRATA_CHECK(opt.begin() == owned_begin() && opt.end() == owned_end(), "the optimizer owns ", opt.begin(), "..",
               opt.end(), ", this rank's slice is ", owned_begin(), "..", owned_end());
  opt.step(model_.params().data(), model_.grads().data(), lr);
  if (sharded()) comm_->all_gather_v(model_.params().data(), shards_.sizes(), "updated parameters");
}

}  // namespace strata
