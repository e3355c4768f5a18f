#include "train/memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "dist/flat_shards.h"
#include "dist/gradient_reducer.h"
#include "models/memory_estimate.h"
#include "models/registry.h"
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

}  // namespace

RankMemoryPlan plan_rank_memory(const Model<float>& model, int B, int T, int dp, int zero_stage, double bucket_cap_mb,
                                int optimizer_states) {
  const MemoryEstimate whole = estimate_training_memory(model, B, T, sizeof(float), optimizer_states);
  const size_t n = model.table().total();
  const size_t slice = dist::FlatShards(n, dp).size(0) * sizeof(float);
  RankMemoryPlan p;
  p.dp = dp;
  p.zero_stage = zero_stage;
  p.parameters = whole.parameters;
  p.activations = whole.activations;
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

RankMemoryPlan plan_stage_memory(const Model<float>& model, const StageShare& s, int T, int dp, int zero_stage,
                                 double bucket_cap_mb, int optimizer_states) {
  const MemoryEstimate micro = estimate_training_memory(model, s.micro_rows, T, sizeof(float), optimizer_states);
  const size_t slice = dist::FlatShards(s.owned, dp).size(0) * sizeof(float);
  const bool sharded = dp > 1 && zero_stage > 0;
  RankMemoryPlan p;
  p.dp = dp;
  p.zero_stage = zero_stage;
  p.optimizer_states = optimizer_states;
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
  // One micro-batch's saved values per block, and outside the blocks: the model's count against
  // that of the same model with twice the blocks (its parameters are never touched, so never
  // allocated). Outside the blocks, the embeddings' output (N x hidden) is the first stage's,
  // the rest (final norm, logits, ...) the last stage's.
  ModelConfig doubled = model.config();
  doubled.num_layers *= 2;
  const auto L = static_cast<size_t>(model.num_blocks());
  const size_t all = model.activation_values(s.micro_rows, T);
  const size_t per_block = (make_model<float>(doubled)->activation_values(s.micro_rows, T) - all) / L;
  const size_t outside = all - L * per_block;
  const size_t embedded = std::min(outside, static_cast<size_t>(s.micro_rows) * T * model.hidden_width());
  const size_t values = per_block * static_cast<size_t>(s.blocks) + (s.stage == 0 ? embedded : 0) +
                        (s.stage == s.stages - 1 ? outside - embedded : 0);
  p.activations = values * sizeof(float) * static_cast<size_t>(s.in_flight);
  p.scratch = micro.scratch * static_cast<size_t>(s.in_flight);
  return p;
}

std::string format_memory_plan(const RankMemoryPlan& p, int B, int T) {
  std::string out = cat("memory plan per rank (fp32, ", p.optimizer_states == 2 ? "AdamW" : "SGD", "; data parallel ",
                        p.dp, ", ZeRO stage ", p.zero_stage, "; batch ", B, " x seq ", T, " per rank",
                        p.stage >= 0 ? cat("; pipeline stage ", p.stage, " of ", p.stages, ", up to ", p.in_flight,
                                           " micro-batches of ", p.micro_rows, " rows in flight")
                                     : std::string(),
                        "):\n");
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
  row("total", p.total(), "");
  return out;
}

std::string format_pipeline_memory_plans(const Model<float>& model, const PipelineStages& stages,
                                         dist::PipelineKind kind, int B, int T, int microbatches, int dp,
                                         int zero_stage, double bucket_cap_mb, int optimizer_states) {
  std::string out;
  for (int s = 0; s < stages.count(); ++s) {
    StageShare share;
    share.stage = s;
    share.stages = stages.count();
    share.owned = stages.end(s) - stages.begin(s);
    for (size_t e : stages.borrowed(s)) share.borrowed += model.table().entries()[e].numel;
    share.blocks = stages.blocks(s);
    share.in_flight = dist::max_in_flight(kind, stages.count(), s, microbatches);
    share.micro_rows = (B + microbatches - 1) / microbatches;
    out += format_memory_plan(plan_stage_memory(model, share, T, dp, zero_stage, bucket_cap_mb, optimizer_states), B, T);
  }
  return out;
}

std::string format_measured_memory(int rank, const RankMemoryMeasured& m) {
  char line[240];
  std::snprintf(line, sizeof line,
                "memory measured, rank %d: peak RSS %.1f MiB; parameters resident %.1f MiB; gradients resident at most "
                "%.1f MiB; optimizer state %.1f MiB",
                rank, mib(m.peak_rss), mib(m.parameters), mib(m.gradients_peak), mib(m.optimizer_state));
  return line;
}

}  // namespace strata
