// Step time of a parallel layout (data x pipeline x tensor), from what one rank measured per
// layer unit (train/unit_profile.h, at the layout's micro-batch and tensor-parallel degree)
// and the links' models (link_model.h). Per micro-batch, pipeline stage s of p takes
//   t_s = its units' forward + backward
//       + the tensor-parallel all-reduces its units make (counted by the profile)
//       + sending its output on (s < p-1) and its input gradient back (s > 0)
// and a step of m micro-batches (per accumulation step) is the pipeline's fill and drain:
//   pipeline = sum_s t_s + (m - 1) max_s t_s
// (the GPipe and 1F1B schedules take the same time; with one stage it is m t_0). Then per step
//   step = accumulation x pipeline + shared parameters (tied embeddings) sent between stages
//        + max over stages of (the all-reduce of the stage's gradients over the data-parallel
//          group + AdamW over its values, a 1/dp slice under ZeRO)
//        + other: what the measured one-rank step has beyond its profile (data loading,
//          logging, the loss's bookkeeping), per step.
// It reports the step as the rank's compute (the slowest stage's own work), the pipeline's
// bubble (idle while it fills and drains) and communication (the rest). All-reduces are counted
// whole (DDP hides part of the data-parallel one behind backward: an upper bound where it
// matters). Ranks that share cores (a study's cells all run on this machine) compute more
// slowly by the ratio of threads to cores, and a rank's compute scales with its threads
// against the profile's. Groups follow the rank grid's default placement (tensor fastest,
// then pipeline, then data): a group whose ranks span more than one host crosses `inter`.
#pragma once
#include <string>
#include <vector>

#include "study/link_model.h"
#include "train/unit_profile.h"

namespace strata::study {

struct LayoutShape {
  int instances = 1;
  int ranks_per_host = 1;
  // The cores the ranks' threads really share: this machine's for cells that all run here; 0
  // for real hosts (every rank has the cores the catalog gives it).
  int shared_cores = 0;
  int threads_per_rank = 1;
  int world() const { return instances * ranks_per_host; }
};

struct ParallelLayout {
  int dp = 1, pp = 1, tp = 1;
  int microbatches = 1;  // of the per-device batch, per accumulation step
  int accumulation = 1;  // gradient_accumulation_steps
  int zero_stage = 0;
  std::vector<int> stage_blocks;  // blocks per pipeline stage; empty: every block on one stage
};

struct StepEstimate {
  double compute_s = 0, bubble_s = 0, comm_s = 0;
  double step_s() const { return compute_s + bubble_s + comm_s; }
};

// Which profile a projection needs: a model directory's units on B x T rows as rank 0 of tp,
// with `threads` threads. `id()` names it in a study's unit_profiles.json.
struct ProfileKey {
  std::string model;
  int B = 0, T = 0, tp = 1, threads = 1;
  std::string id() const;
};

// `micro`: the profile at the layout's micro-batch (per-device batch / microbatches) and
// tensor-parallel degree. `other_s`: per step, at the profile's threads (other_seconds).
StepEstimate project_layout(const UnitProfile& micro, const ParallelLayout& layout, const LayoutShape& shape,
                            const LinkModel& intra, const LinkModel& inter, double other_s);

// What a measured one-rank step has beyond its profile at the same batch and threads (never
// below zero: a profile taken on a busier moment than the run only drops it).
double other_seconds(double measured_step_s, const UnitProfile& whole_batch);

}  // namespace strata::study
