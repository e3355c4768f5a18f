#include "train/data_parallel_step.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/ops.h"
#include "kernels/device.h"
#include "util/error.h"

namespace strata {

DataParallelStep::DataParallelStep(dist::Communicator* comm, Model<float>& model, int zero_stage, double bucket_cap_mb)
    : DataParallelStep(comm, model, 0, model.grads().size(), zero_stage, bucket_cap_mb) {}

DataParallelStep::DataParallelStep(dist::Communicator* comm, Model<float>& model, size_t begin, size_t end,
                                   int zero_stage, double bucket_cap_mb, dist::Communicator* tensor)
    : comm_(comm && comm->size() > 1 ? comm : nullptr),
      tensor_(tensor && tensor->size() > 1 ? tensor : nullptr),
      model_(model),
      begin_(begin),
      end_(end),
      stage_(zero_stage),
      shards_(end - begin, comm_ ? comm_->size() : 1) {
  STRATA_CHECK(zero_stage >= 0 && zero_stage <= 2, "ZeRO stage ", zero_stage, " is not 0, 1 or 2");
  STRATA_CHECK(begin <= end && end <= model.grads().size(), "data-parallel window ", begin, "..", end, " of ",
               model.grads().size(), " values");
  if (!comm_ || begin == end) return;
  const auto cap = static_cast<size_t>(bucket_cap_mb * 1024 * 1024 / sizeof(float));
  float* g = model_.grads().data();
  reducer_ = std::make_unique<dist::GradientReducer>(*comm_, g + begin_, end_ - begin_, cap,
                                                     stage_ > 0 ? &shards_ : nullptr, stage_ == 2);
  if (stage_ == 2) {  // from now on only the owned slice of the gradients is ever non-zero here
    map_units_for_release();
    kernels::zero_and_release(g + begin_, (owned_begin() - begin_) * sizeof(float));
    kernels::zero_and_release(g + owned_end(), (end_ - owned_end()) * sizeof(float));
  }
}

size_t DataParallelStep::owned_begin() const { return begin_ + (sharded() ? shards_.begin(comm_->rank()) : 0); }
size_t DataParallelStep::owned_end() const { return sharded() ? begin_ + shards_.end(comm_->rank()) : end_; }

void DataParallelStep::zero_grads() {
  // ZeRO-2: the rest was zeroed (and released) when its buckets were reduced.
  const bool slice = stage_ == 2 && comm_;
  const size_t lo = slice ? owned_begin() : begin_, hi = slice ? owned_end() : end_;
  float* g = model_.grads().data();
  kernels::back_memory(g + lo, (hi - lo) * sizeof(float));
  kernels::fill(g + lo, hi - lo, 0.0f);
}

void DataParallelStep::begin_micro(int i, int n) {
  if (stage_ == 2 && reducer_) {  // the gradients the first unit of backward writes
    for (auto [b, e] : shared_runs_) {
      b = std::max(b, begin_);
      e = std::min(e, end_);
      if (b < e) kernels::back_memory(model_.grads().data() + b, (e - b) * sizeof(float));
    }
    backed_from_ = end_;
    back_down_to(unit_below(end_));
  }
  if (reduces(i, n)) reducer_->begin_step();
}

GradsFinalHook DataParallelStep::hook(int i, int n) {
  if (!reduces(i, n)) return {};
  return [this](size_t offset) { grads_final_from(offset); };
}

void DataParallelStep::grads_final_from(size_t offset) {
  if (offset >= end_) return;  // nothing of the window
  if (stage_ == 2) {
    back_down_to(unit_below(offset));  // what the next unit's backward writes
    sample_gradient_residency();       // before the bucket is released: the local peak
  }
  reducer_->grads_final_from(std::max(offset, begin_) - begin_);
}

void DataParallelStep::end_micro(int i, int n) {
  // ZeRO-2: what no backward wrote (an empty micro-batch, a backward that stops early) is zero
  // and is reduced all the same: unit by unit, as a backward would hand it over, so that it
  // too is backed only while its buckets are in flight.
  if (stage_ == 2 && reducer_)
    for (size_t x = backed_from_; x > begin_; x = backed_from_) grads_final_from(x);
  sample_gradient_residency();
  if (reduces(i, n)) reducer_->finish_step();
}

size_t DataParallelStep::unit_below(size_t offset) const {
  const auto above = std::lower_bound(unit_begins_.begin(), unit_begins_.end(), offset);
  return std::max(begin_, above == unit_begins_.begin() ? begin_ : *std::prev(above));
}

void DataParallelStep::back_down_to(size_t offset) {
  if (offset >= backed_from_) return;
  kernels::back_memory(model_.grads().data() + offset, (backed_from_ - offset) * sizeof(float));
  backed_from_ = offset;
}

void DataParallelStep::map_units_for_release() {
  // Each unit's own gradients are the run from its first parameter up to the next unit's
  // (the table lists parameters in unit order); a parameter several units read (a tied
  // embedding, ALBERT's shared layer) is written from the first of their backwards to the last.
  const auto& entries = model_.table().entries();
  std::vector<int> readers(entries.size(), 0);
  std::vector<bool> seen(entries.size(), false);
  for (int u = 0; u < model_.num_units(); ++u) {
    size_t first = SIZE_MAX;
    for (size_t e : model_.unit_parameters(u)) {
      ++readers[e];
      if (!seen[e]) first = std::min(first, entries[e].offset);
      seen[e] = true;
    }
    if (first != SIZE_MAX) unit_begins_.push_back(first);
  }
  std::sort(unit_begins_.begin(), unit_begins_.end());
  for (size_t e = 0; e < entries.size(); ++e)
    if (readers[e] > 1) shared_runs_.emplace_back(entries[e].offset, entries[e].offset + entries[e].numel);
}

void DataParallelStep::sample_gradient_residency() {
  const float* g = model_.grads().data();
  peak_grad_bytes_ = std::max(peak_grad_bytes_, kernels::resident_bytes(g + begin_, (end_ - begin_) * sizeof(float)));
}

std::vector<std::pair<size_t, size_t>> DataParallelStep::replicated_runs() const {
  std::vector<std::pair<size_t, size_t>> runs;
  for (const ParamEntry& e : model_.table().entries()) {
    const size_t b = std::max(e.offset, owned_begin()), x = std::min(e.offset + e.numel, owned_end());
    if (!e.replicated() || b >= x) continue;
    if (!runs.empty() && runs.back().second == b)
      runs.back().second = x;
    else
      runs.emplace_back(b, x);
  }
  return runs;
}

double DataParallelStep::clip(double max_norm, dist::Communicator* stages, double loss_scale) {
  float* g = model_.grads().data() + owned_begin();
  const size_t n = owned_end() - owned_begin();
  // sq[0]: every parameter's squares but (tensor parallel) the replicated ones, in sq[1].
  double sq[2] = {0, 0};
  if (!tensor_) {
    sq[0] = kernels::sum_squares(g, n);
  } else {
    size_t at = owned_begin();
    const float* base = model_.grads().data();
    for (const auto& [b, e] : replicated_runs()) {
      sq[0] += kernels::sum_squares(base + at, b - at);
      sq[1] += kernels::sum_squares(base + b, e - b);
      at = e;
    }
    sq[0] += kernels::sum_squares(base + at, owned_end() - at);
  }
  // Each slice (and each stage's window) holds its part of the sum; each tensor-parallel rank
  // its slices of the split parameters.
  if (sharded()) comm_->all_reduce_sum(sq, 2, "gradient norm");
  if (stages && stages->size() > 1) stages->all_reduce_sum(sq, 2, "gradient norm over stages");
  if (tensor_) tensor_->all_reduce_sum(sq, 1, "gradient norm over tensor-parallel slices");
  const double norm = std::sqrt(sq[0] + sq[1]) / loss_scale;
  if (!std::isfinite(norm)) return norm;
  const double clip_coef = max_norm > 0 ? max_norm / (norm + 1e-6) : 1.0;
  const double coef = std::min(clip_coef, 1.0) / loss_scale;
  if (coef != 1) kernels::scale(g, n, static_cast<float>(coef));
  return norm;
}

void DataParallelStep::update(Optimizer<float>& opt, double lr) {
  STRATA_CHECK(opt.begin() == owned_begin() && opt.end() == owned_end(), "the optimizer owns ", opt.begin(), "..",
               opt.end(), ", this rank's slice is ", owned_begin(), "..", owned_end());
  opt.step(model_.params().data(), model_.grads().data(), lr);
  if (sharded()) comm_->all_gather_v(model_.params().data() + begin_, shards_.sizes(), "updated parameters");
}

}  // namespace strata
