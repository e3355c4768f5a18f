#include "train/memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "dist/flat_shards.h"
#include "dist/gradient_reducer.h"
#include "kernels/device.h"
#include "models/memory_estimate.h"
#include "train/mixed_precision.h"
#include "util/error.h"

namespace strata {

namespace {

double mib(size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

// How many units read each table entry.
std::vector<int> readers(const Model<float>& model) {
  std::vector<int> r(model.table().entries().size(), 0);
  for (int u = 0; u < model.num_units(); ++u)
    for (size_t e : model.unit_parameters(u)) ++r[e];
  return r;
}

// Flat ranges [offset, offset + numel) of the parameters that more than one unit reads.
std::vector<std::pair<size_t, size_t>> shared_ranges(const Model<float>& model) {
  const std::vector<int> r = readers(model);
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t e = 0; e < r.size(); ++e)
    if (r[e] > 1) out.emplace_back(model.table().entries()[e].offset, model.table().entries()[e].numel);
  return out;
}

// The most values of unshared parameters one unit reads: what one unit's backward writes
// before it reports them final (shared ones are counted apart).
size_t largest_unit(const Model<float>& model) {
  const std::vector<int> r = readers(model);
  size_t most = 0;
  for (int u = 0; u < model.num_units(); ++u) {
    size_t n = 0;
    for (size_t e : model.unit_parameters(u))
      if (r[e] == 1) n += model.table().entries()[e].numel;
    most = std::max(most, n);
  }
  return most;
}

// Gathering a language-model head's logits under tensor parallelism is an all-reduce of the
// whole [rows, vocabulary] buffer, for which OpenMPI takes a temporary of up to the message's
// size: counted once, as it is freed after each batch.
size_t gather_temporary(const Model<float>& model, int Be, int Te) { return model.gathered_output_values(Be, Te); }

// What an evaluation pass (Model::infer, then the loss) adds to a state trained at B x T when
// it runs at Be x Te: the inference slots, the gathered outputs, and the growth of the training
// buffers it writes (the values outside the blocks, the hand-off buffer and output, at most two
// block records, and d(loss)/d(outputs)) where it runs on more rows than training.
size_t single_stage_evaluation(const Model<float>& model, int B, int T, int Be, int Te,
                               const nn::ActivationPolicy& policy) {
  auto written = [&](int rows, int seq) {
    const Model<float>::ActivationTerms t = model.activation_terms(rows, seq);
    return t.outside + 3 * t.boundary + 2 * t.block_saved.saved + model.loss_values(rows, seq);
  };
  const size_t trained = written(B, T), evaluated = written(Be, Te);
  return model.activation_values(Be, Te, policy).inference + model.gathered_output_values(Be, Te) +
         gather_temporary(model, Be, Te) + (evaluated > trained ? evaluated - trained : 0);
}

// One micro-batch's activations under the policy for a pipeline stage: its blocks (for
// ALBERT, their layer applications; for an encoder-decoder, those of either stack in it) as
// BlockActivations holds a range of them, the embeddings' output (one boundary) on the first
// stage, the rest outside the blocks (final norm, logits, ...) on the last.
nn::ActivationFootprint stage_footprint(const Model<float>& model, const StageShare& s, int rows, int T,
                                        const nn::ActivationPolicy& policy) {
  const Model<float>::ActivationTerms t = model.activation_terms(rows, T);
  const int per_block = (t.blocks + t.decoder_blocks) / model.num_blocks();
  const int first = s.first_block * per_block, end = (s.first_block + s.blocks) * per_block;
  nn::ActivationFootprint f =
      nn::block_footprint(policy, first, std::min(end, t.blocks), t.block_saved, t.boundary);
  f += nn::block_footprint(policy, std::max(first, t.blocks), end, t.decoder_saved, t.decoder_boundary);
  const size_t embedded = std::min(t.outside, t.boundary);
  f.resident += (s.stage == 0 ? embedded : 0) + (s.stage == s.stages - 1 ? t.outside - embedded : 0);
  return f;
}

}  // namespace

RankMemoryPlan plan_rank_memory(const Model<float>& model, int B, int T, int dp, int zero_stage, double bucket_cap_mb,
                                int optimizer_states, const nn::ActivationPolicy& activations, EvalShape eval) {
  const MemoryEstimate whole = estimate_training_memory(model, B, T, sizeof(float), optimizer_states, activations);
  const size_t n = model.table().total();
  const size_t slice = dist::FlatShards(n, dp).size(0) * sizeof(float);
  RankMemoryPlan p;
  p.dp = dp;
  p.tp = model.tensor_split().degree;
  p.zero_stage = zero_stage;
  p.parameters = whole.parameters;
  p.activation_policy = activations;
  p.activations = whole.activations;
  p.offloaded = whole.offloaded;
  p.eval_rows = eval.B > 0 ? eval.B : B;
  p.eval_seq = eval.T > 0 ? eval.T : T;
  p.evaluation = single_stage_evaluation(model, B, T, p.eval_rows, p.eval_seq, activations) * sizeof(float);
  p.scratch = whole.scratch;
  const bool sharded = dp > 1 && zero_stage > 0;
  p.optimizer_state = sharded ? slice * static_cast<size_t>(optimizer_states) : whole.optimizer_state;
  p.gradients = p.gradients_peak = whole.gradients;
  if (sharded && zero_stage == 2) {
    const auto bucket = static_cast<size_t>(bucket_cap_mb * 1024 * 1024);
    const dist::FlatShards shards(n, dp);
    const auto shared = shared_ranges(model);
    // In flight on top of the shared parameters: the buckets the reducer lets wait, and the
    // unit backward is writing.
    const size_t in_flight = dist::GradientReducer::kMaxInFlight * bucket + largest_unit(model) * sizeof(float);
    p.gradients = slice;
    p.gradients_peak = 0;
    for (int r = 0; r < dp; ++r) {
      size_t early = 0;  // shared parameters' values outside rank r's slice
      for (const auto& [off, numel] : shared) {
        const size_t lo = std::max(off, shards.begin(r)), hi = std::min(off + numel, shards.end(r));
        early += numel - (lo < hi ? hi - lo : 0);
      }
      const size_t mine = shards.size(r) * sizeof(float), others = whole.gradients - mine;
      p.gradients_peak = std::max(p.gradients_peak, mine + std::min(others, early * sizeof(float) + in_flight));
    }
  }
  p.optimizer_states = optimizer_states;
  return p;
}

RankMemoryPlan plan_replica_memory(const Model<float>& model, int B, int T, int replicas, int dp, int zero_stage,
                                   double bucket_cap_mb, int optimizer_states, const nn::ActivationPolicy& activations,
                                   EvalShape eval) {
  const int rows = (B + replicas - 1) / replicas;
  if (eval.B == 0) eval.B = B;  // evaluation batches keep the training batch's rows
  RankMemoryPlan p = plan_rank_memory(model, rows, T, dp, zero_stage, bucket_cap_mb, optimizer_states, activations, eval);
  const auto R = static_cast<size_t>(replicas);
  p.replicas = replicas;
  p.micro_rows = rows;
  p.activations *= R;
  p.offloaded *= R;
  p.scratch *= R;
  const size_t buffer = model.table().total() * sizeof(float);
  p.gradients += (R - 1) * buffer;
  p.gradients_peak += (R - 1) * buffer;
  return p;
}

StageShare stage_share(const Model<float>& model, const PipelineStages& stages, int s, dist::PipelineKind kind, int B,
                       int microbatches) {
  StageShare share;
  share.stage = s;
  share.stages = stages.count();
  share.owned = stages.end(s) - stages.begin(s);
  for (size_t e : stages.borrowed(s)) share.borrowed += model.table().entries()[e].numel;
  share.first_block = std::max(stages.units(s).begin, 1) - 1;
  share.blocks = stages.blocks(s);
  share.in_flight = dist::max_in_flight(kind, stages.count(), s, microbatches);
  share.micro_rows = (B + microbatches - 1) / microbatches;
  return share;
}

RankMemoryPlan plan_stage_memory(const Model<float>& model, const StageShare& s, int T, int dp, int zero_stage,
                                 double bucket_cap_mb, int optimizer_states, const nn::ActivationPolicy& activations,
                                 EvalShape eval) {
  const size_t slice = dist::FlatShards(s.owned, dp).size(0) * sizeof(float);
  const bool sharded = dp > 1 && zero_stage > 0;
  RankMemoryPlan p;
  p.dp = dp;
  p.tp = model.tensor_split().degree;
  p.zero_stage = zero_stage;
  p.optimizer_states = optimizer_states;
  p.activation_policy = activations;
  p.stage = s.stage;
  p.stages = s.stages;
  p.in_flight = s.in_flight;
  p.micro_rows = s.micro_rows;
  const size_t owned = s.owned * sizeof(float), borrowed = s.borrowed * sizeof(float);
  p.parameters = owned + borrowed;
  p.optimizer_state = (sharded ? slice : owned) * static_cast<size_t>(optimizer_states);
  p.gradients = p.gradients_peak = owned + borrowed;
  if (sharded && zero_stage == 2) {  // the slice, and in backward the buckets the reducer lets wait
    const auto bucket = static_cast<size_t>(bucket_cap_mb * 1024 * 1024);
    p.gradients = slice + borrowed;
    p.gradients_peak = std::min(owned, slice + dist::GradientReducer::kMaxInFlight * bucket) + borrowed;
  }
  // Each micro-batch in flight has a state of its own.
  const nn::ActivationFootprint f = stage_footprint(model, s, s.micro_rows, T, activations);
  const auto states = static_cast<size_t>(s.in_flight);
  p.activations = f.resident * sizeof(float) * states;
  p.offloaded = f.offloaded * sizeof(float) * states;
  p.scratch = model.scratch_values(s.micro_rows, T) * sizeof(float) * states;
  p.eval_rows = eval.B > 0 ? eval.B : s.micro_rows;
  p.eval_seq = eval.T > 0 ? eval.T : T;
  if (s.stages == 1) {  // Model::infer in the first state, as without a pipeline
    p.evaluation =
        single_stage_evaluation(model, s.micro_rows, T, p.eval_rows, p.eval_seq, activations) * sizeof(float);
    return p;
  }
  // With several stages each runs its training forward on whole evaluation batches in two
  // states in turn: the first two training states grow to the evaluation's size (their
  // buffers keep their capacity), or a second one is new where training keeps one. The last
  // stage also computes the loss and gathers the outputs.
  const bool last = s.stage == s.stages - 1;
  const size_t trained = f.resident + (last ? model.loss_values(s.micro_rows, T) : 0);
  const size_t evaluated =
      stage_footprint(model, s, p.eval_rows, p.eval_seq, activations).resident +
      (last ? model.loss_values(p.eval_rows, p.eval_seq) + model.gathered_output_values(p.eval_rows, p.eval_seq) : 0);
  p.evaluation = (2 * std::max(trained, evaluated) - std::min<size_t>(states, 2) * trained +
                  (last ? gather_temporary(model, p.eval_rows, p.eval_seq) : 0)) *
                 sizeof(float);
  return p;
}

std::string format_memory_plan(const RankMemoryPlan& p, int B, int T) {
  std::string out = cat("memory plan per rank (fp32, ", p.optimizer_states == 2 ? "AdamW" : "SGD", "; data parallel ",
                        p.dp, ", ZeRO stage ", p.zero_stage, p.tp > 1 ? cat("; tensor parallel ", p.tp) : std::string(),
                        "; batch ", B, " x seq ", T, " per rank",
                        p.stage >= 0 ? cat("; pipeline stage ", p.stage, " of ", p.stages, ", up to ", p.in_flight,
                                           " micro-batches of ", p.micro_rows, " rows in flight")
                                     : std::string(),
                        p.replicas > 1 ? cat("; ", p.replicas, " replica threads of ", p.micro_rows, " rows, a gradient "
                                             "buffer each")
                                       : std::string(),
                        "; activations ", p.activation_policy.describe(), "):\n");
  char line[160];
  auto row = [&](const char* what, size_t bytes, const char* note) {
    std::snprintf(line, sizeof line, "  %-17s %10.1f MiB%s\n", what, mib(bytes), note);
    out += line;
  };
  const bool sharded_grads = p.gradients != p.gradients_peak;
  row("parameters", p.parameters, "");
  row("gradients", p.gradients_peak, sharded_grads ? "  (peak in backward)" : "");
  if (sharded_grads) row("  kept", p.gradients, "  (this rank's slice, between steps)");
  row("optimizer state", p.optimizer_state, p.dp > 1 && p.zero_stage > 0 ? "  (this rank's slice)" : "");
  row("activations", p.activations, "");
  row("backward scratch", p.scratch, "");
  if (p.product_operands) row("bf16/fp16 operands", p.product_operands, "  (products' converted inputs)");
  row("total", p.total(), "");
  if (p.offloaded)
    row("offload pool", p.offloaded,
        kernels::on_cuda() ? "  (page-locked host memory, off the GPU)" : "  (file-backed, outside the resident set)");
  if (p.evaluation)
    row("evaluation adds", p.evaluation,
        cat("  (an evaluation pass at ", p.eval_rows, " x ", p.eval_seq, "; besides the total)").c_str());
  return out;
}

std::string format_pipeline_memory_plans(const Model<float>& model, const PipelineStages& stages,
                                         dist::PipelineKind kind, int B, int T, int microbatches, int dp,
                                         int zero_stage, double bucket_cap_mb, int optimizer_states,
                                         const nn::ActivationPolicy& activations, EvalShape eval) {
  std::string out;
  for (int s = 0; s < stages.count(); ++s)
    out += format_memory_plan(plan_stage_memory(model, stage_share(model, stages, s, kind, B, microbatches), T, dp,
                                                zero_stage, bucket_cap_mb, optimizer_states, activations, eval),
                              B, T);
  return out;
}

std::string format_measured_memory(int rank, const RankMemoryMeasured& m) {
  char line[400];
  std::snprintf(line, sizeof line,
                "memory measured, rank %d: peak RSS %.1f MiB; parameters resident %.2f MiB; gradients resident at most "
                "%.2f MiB; optimizer state %.1f MiB; predicted peak %.1f MiB (the plan + %.1f MiB held before "
                "training: code, libraries, data), measured/predicted %.3f",
                rank, mib(m.peak_rss), mib(m.parameters), mib(m.gradients_peak), mib(m.optimizer_state),
                mib(m.predicted_peak), mib(m.held_before_training),
                m.predicted_peak ? static_cast<double>(m.peak_rss) / m.predicted_peak : 0.0);
  std::string out = line;
  if (m.offload_pool) {
    std::snprintf(line, sizeof line, "; offload pool %.1f MiB (%s)", mib(m.offload_pool),
                  kernels::on_cuda() ? "page-locked host memory" : "file-backed");
    out += line;
  }
  return out;
}

RankMemoryPlan plan_largest_rank(const Model<float>& rank_model, const std::vector<int>& stage_blocks, int B, int T,
                                 int dp, const TrainingArguments& a, bool on_gpu) {
  const int states = a.optimizer_states();
  RankMemoryPlan largest;
  if (stage_blocks.size() <= 1 && a.microbatches == 1) {
    largest = plan_rank_memory(rank_model, B, T, dp, a.sharding_stage(), a.ddp_bucket_cap_mb, states, activation_policy(a));
  } else {
    const PipelineStages stages(rank_model,
                                stage_blocks.empty() ? std::vector<int>{rank_model.num_blocks()} : stage_blocks);
    for (int s = 0; s < stages.count(); ++s) {
      const RankMemoryPlan p = plan_stage_memory(
          rank_model, stage_share(rank_model, stages, s, dist::parse_pipeline_kind(a.pipeline), B, a.microbatches), T,
          dp, a.sharding_stage(), a.ddp_bucket_cap_mb, states, activation_policy(a));
      if (s == 0 || p.total() > largest.total()) largest = p;
    }
  }
  largest.product_operands =
      product_operand_bytes(requested_precision(a), rank_model.config(), static_cast<size_t>(B) * T, on_gpu);
  return largest;
}

}  // namespace strata
