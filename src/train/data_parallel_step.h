// The data-parallel phases of one optimizer step, around the model's forward and backward:
// zero the gradients, reduce them over the data-parallel group while backward runs, take the
// global gradient norm and clip, update, and gather. Three stages, as DeepSpeed numbers them:
//
//   0  DDP: every gradient bucket is all-reduced; every rank updates every parameter.
//   1  ZeRO-1 (SageMaker's shard_optimizer_state): the flat buffer is cut into one slice per
//      rank (dist/flat_shards.h); each bucket is reduced to the rank that owns it, each rank
//      updates its slice only and keeps optimizer state for it only, then the updated
//      parameters are all-gathered.
//   2  ZeRO-2: as 1, and a rank keeps only its slice of the gradients: the buckets it does not
//      own are zeroed and their pages given back to the OS once reduced, so the reduction runs
//      after every micro-batch's backward (a rank cannot keep other slices' partial sums).
//
// The optimizer update is element-wise and the norm a sum over slices, so every stage gives
// the single-process result up to the order of the sum of squares (in double).
//
// Under pipeline parallelism a rank owns only its stage's window [begin, end) of the flat
// buffers (train/pipeline_stages.h): everything above applies to that window, the data-parallel
// group is the ranks of the same stage, and the gradient norm also sums over the stages.
#pragma once
#include <memory>
#include <utility>
#include <vector>

#include "dist/communicator.h"
#include "dist/flat_shards.h"
#include "dist/gradient_reducer.h"
#include "models/model.h"
#include "train/optimizer.h"

namespace strata {

class DataParallelStep {
 public:
  // comm: the data-parallel group (null: one process). bucket_cap_mb: ddp_bucket_cap_mb.
  // [begin, end): the window of the flat buffers this rank's stage owns (all of it without a
  // pipeline).
  DataParallelStep(dist::Communicator* comm, Model<float>& model, int zero_stage, double bucket_cap_mb);
  // tensor: the tensor-parallel group whose slices the model holds (null: unsplit), over
  // which the gradient norm also sums.
  DataParallelStep(dist::Communicator* comm, Model<float>& model, size_t begin, size_t end, int zero_stage,
                   double bucket_cap_mb, dist::Communicator* tensor = nullptr);

  int zero_stage() const { return stage_; }
  bool sharded() const { return stage_ > 0 && ranks() > 1; }  // the optimizer owns a slice
  int ranks() const { return comm_ ? comm_->size() : 1; }
  const dist::FlatShards& shards() const { return shards_; }
  // The slice this rank updates (the whole window unless sharded).
  size_t owned_begin() const;
  size_t owned_end() const;

  void zero_grads();
  // Around the backward of micro-batch i of n (i = 0 .. n-1), in order; hook() is what the
  // backward reports final gradients to (empty when this micro-batch does not reduce).
  void begin_micro(int i, int n);
  GradsFinalHook hook(int i, int n);
  void end_micro(int i, int n);
  // The global L2 norm of the summed gradients; when max_norm > 0, scales them by
  // max_norm / (norm + 1e-6) if that is below 1 (torch.nn.utils.clip_grad_norm_). Returns the
  // norm before clipping. `stages`: the pipeline group, whose windows the norm also covers.
  // Under tensor parallelism the split parameters' squares are summed over the group and the
  // replicated ones (the same gradient on every rank, by construction) counted once.
  // `loss_scale`: the gradients are that many times the true ones (fp16's loss scaling); they are
  // divided by it in the same pass as the clipping, and the norm returned is the true one. A
  // norm that is not finite (an overflow) is returned as is, the gradients untouched.
  double clip(double max_norm, dist::Communicator* stages = nullptr, double loss_scale = 1);
  // The optimizer step over the owned slice, then (sharded) the all-gather of the parameters.
  void update(Optimizer<float>& opt, double lr);

  // The most gradient bytes resident in RAM at once (mincore), sampled when backward hands a
  // bucket over (ZeRO-2) and when a micro-batch's backward ends: the measured counterpart of
  // memory_plan.h's gradients_peak.
  size_t peak_gradient_bytes() const { return peak_grad_bytes_; }

  double comm_seconds() const { return reducer_ ? reducer_->comm_seconds() : 0; }
  double wait_seconds() const { return reducer_ ? reducer_->wait_seconds() : 0; }

 private:
  bool reduces(int i, int n) const { return reducer_ && (stage_ == 2 || i == n - 1); }
  // The replicated parameters' runs of the owned slice, [begin, end) flat offsets.
  std::vector<std::pair<size_t, size_t>> replicated_runs() const;
  void sample_gradient_residency();
  // ZeRO-2 keeps only its slice of the gradients: the rest is given back as each bucket is
  // reduced, and backed again (on a GPU; on the CPU the OS does it as a page is written) just
  // before a unit's backward writes it, so that at most the buckets in flight are held besides.
  // Backward runs down the flat buffer: [backed_from_, end) is backed in this micro-batch.
  void map_units_for_release();
  void grads_final_from(size_t offset);    // what hook() reports to
  size_t unit_below(size_t offset) const;  // where the unit whose gradients end at offset starts
  void back_down_to(size_t offset);

  dist::Communicator* comm_;
  dist::Communicator* tensor_;
  Model<float>& model_;
  size_t begin_, end_;  // the window
  int stage_;
  dist::FlatShards shards_;
  std::unique_ptr<dist::GradientReducer> reducer_;
  size_t peak_grad_bytes_ = 0;
  std::vector<size_t> unit_begins_;                      // each unit's first own gradient, ascending
  std::vector<std::pair<size_t, size_t>> shared_runs_;   // parameters several units read
  size_t backed_from_ = 0;
};

}  // namespace strata
