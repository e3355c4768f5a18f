#include "train/memory_plan.h"

#include <algorithm>
#include <cstdio>

#include "dist/flat_shards.h"
#include "models/memory_estimate.h"
#include "util/error.h"

namespace strata {

namespace {
double mib(size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }
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
    p.gradients = slice;
    p.gradients_peak = std::min(whole.gradients, slice + 2 * bucket);
  }
  return p;
}

std::string format_memory_plan(const RankMemoryPlan& p, int B, int T) {
  std::string out = cat("memory plan per rank (fp32; data parallel ", p.dp, ", ZeRO stage ", p.zero_stage,
                        "; batch ", B, " x seq ", T, " per rank):\n");
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

std::string format_measured_memory(int rank, const RankMemoryMeasured& m) {
  char line[240];
  std::snprintf(line, sizeof line,
                "memory measured, rank %d: peak RSS %.1f MiB; parameters resident %.1f MiB; gradients resident at most "
                "%.1f MiB; optimizer state %.1f MiB",
                rank, mib(m.peak_rss), mib(m.parameters), mib(m.gradients_peak), mib(m.optimizer_state));
  return line;
}

}  // namespace strata
