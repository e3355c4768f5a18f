// Training memory per rank for a parallel layout: the plan (what the buffers a rank allocates
// will hold, before any work) and the measurement (what was resident, at the end of a job).
// The plan is models/memory_estimate.h's count with ZeRO's slicing applied: at stage 1 and 2
// the optimizer state covers this rank's slice only; at stage 2 the gradients too, between
// reductions. During backward a ZeRO-2 rank also holds the gradients of other slices that
// backward has written and the communication thread has not yet reduced: at most
// GradientReducer::kMaxInFlight buckets (backward waits beyond that) plus the unit backward is
// writing, and every parameter that more than one layer unit reads (a tied embedding,
// ALBERT's shared block), whose gradient is written by the last unit and final only after the
// first.
#pragma once
#include <cstddef>
#include <string>

#include "dist/pipeline_schedule.h"
#include "models/model.h"
#include "train/pipeline_stages.h"
#include "train/training_args.h"

namespace strata {

struct RankMemoryPlan {
  int dp = 1, zero_stage = 0, optimizer_states = 2;
  int tp = 1;  // tensor parallelism: the model's table and activations are one rank's slices
  nn::ActivationPolicy activation_policy;
  int stage = -1, stages = 1, in_flight = 1, micro_rows = 0;  // under pipeline parallelism
  int replicas = 1;  // replica threads (train/pipeline_step.h), each with a state of micro_rows rows
  size_t parameters = 0;
  size_t gradients = 0;       // resident between steps (the rank with the largest slice)
  size_t gradients_peak = 0;  // during backward (the rank where it is largest)
  size_t optimizer_state = 0;
  size_t activations = 0, scratch = 0;  // activations: resident under the policy
  // Mixed precision: the converted operands each product-running thread keeps
  // (train/mixed_precision.h: product_operand_bytes); 0 in fp32.
  size_t product_operands = 0;
  size_t offloaded = 0;   // activations in the offload pool (file-backed, outside the resident set)
  size_t evaluation = 0;  // what an evaluation pass adds to the resident activations
  int eval_rows = 0, eval_seq = 0;  // the shape `evaluation` was planned at
  size_t total() const {
    return parameters + gradients_peak + optimizer_state + activations + scratch + product_operands;
  }
};

// The shape of an evaluation batch per rank (per_device_eval_batch_size x sequence length);
// zeros mean the training batch's.
struct EvalShape {
  int B = 0, T = 0;
};

// Batch B x T per rank. optimizer_states: 2 for AdamW (exp_avg, exp_avg_sq), 1 for SGD
// (momentum). Slices differ by rank only at the end of the buffer: the plan is the largest.
RankMemoryPlan plan_rank_memory(const Model<float>& model, int B, int T, int dp, int zero_stage,
                                double bucket_cap_mb, int optimizer_states,
                                const nn::ActivationPolicy& activations = {}, EvalShape eval = {});

// With replica threads (train/pipeline_step.h): `replicas` states of ceil(B / replicas) rows in
// place of one of B, and a gradient buffer more per replica after the first. Evaluation runs in
// the first state.
RankMemoryPlan plan_replica_memory(const Model<float>& model, int B, int T, int replicas, int dp, int zero_stage,
                                   double bucket_cap_mb, int optimizer_states,
                                   const nn::ActivationPolicy& activations = {}, EvalShape eval = {});

// Under pipeline parallelism, a rank of one stage (the data-parallel rank with the largest
// slice): parameters and gradients of the window the stage owns plus the shared parameters it
// borrows (pipeline_stages.h), optimizer state of its window (its slice with ZeRO), and the
// activations (under the policy) and backward scratch of the micro-batches in flight (each has
// its own state): its blocks, the embeddings' output on the first stage, the head's (logits,
// ...) on the last. Evaluation runs the stage's training forward, in two of those states in
// turn, on whole evaluation batches (not micro-batches).
struct StageShare {
  int stage = 0, stages = 1;
  size_t owned = 0, borrowed = 0;  // values of the flat buffers
  int first_block = 0, blocks = 0;  // the stage's blocks
  int in_flight = 1;                // micro-batches whose state the stage keeps at once
  int micro_rows = 0;               // rows of one micro-batch
};
// Stage s of `stages` with batches of B rows cut into `microbatches` under `kind`'s schedule.
StageShare stage_share(const Model<float>& model, const PipelineStages& stages, int s, dist::PipelineKind kind, int B,
                       int microbatches);
RankMemoryPlan plan_stage_memory(const Model<float>& model, const StageShare& s, int T, int dp, int zero_stage,
                                 double bucket_cap_mb, int optimizer_states,
                                 const nn::ActivationPolicy& activations = {}, EvalShape eval = {});

// Before any run, the plan of the rank with the largest one in a layout: `rank_model` is one
// tensor-parallel rank's model (its slices), `stage_blocks` the pipeline's blocks per stage
// (empty: one stage), B x T per rank, dp data-parallel ranks; the rest (ZeRO stage, buckets,
// optimizer, micro-batches, schedule, activation policy) from `a`; `on_gpu`: a GPU rank's
// (its converted product operands are the GPU's).
RankMemoryPlan plan_largest_rank(const Model<float>& rank_model, const std::vector<int>& stage_blocks, int B, int T,
                                 int dp, const TrainingArguments& a, bool on_gpu = false);

// A few lines: one per kind of state, in MiB.
std::string format_memory_plan(const RankMemoryPlan& p, int B, int T);

// The plans of every stage of a pipeline (B rows per batch, cut into `microbatches`).
std::string format_pipeline_memory_plans(const Model<float>& model, const PipelineStages& stages,
                                         dist::PipelineKind kind, int B, int T, int microbatches, int dp,
                                         int zero_stage, double bucket_cap_mb, int optimizer_states,
                                         const nn::ActivationPolicy& activations = {}, EvalShape eval = {});

// What one rank held, measured at the end of training.
struct RankMemoryMeasured {
  size_t peak_rss = 0;        // the process's peak resident set (VmHWM): everything, libraries included
  size_t parameters = 0;      // resident bytes of the flat parameter buffer (a pipeline stage's share)
  size_t gradients_peak = 0;  // DataParallelStep::peak_gradient_bytes
  size_t optimizer_state = 0; // resident bytes of the optimizer's state buffers
  // What peak_rss should be: the plan's total at the largest batch trained on (with the
  // evaluation pass at the largest batch evaluated on, if one ran) plus held_before_training, the resident bytes besides parameters,
  // gradients and optimizer state when training started (code, libraries, data).
  size_t predicted_peak = 0, held_before_training = 0;
  size_t offload_pool = 0;  // the most the offload pool held (ModelState::offload_pool_bytes)
};
std::string format_measured_memory(int rank, const RankMemoryMeasured& m);

}  // namespace strata
