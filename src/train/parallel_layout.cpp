#include "train/parallel_layout.h"

#include "train/pipeline_partition.h"
#include "util/error.h"

namespace strata {

dist::RankGrid make_rank_grid(const TrainingArguments& a, const dist::Layout& layout) {
  return dist::RankGrid(layout.world_size, a.pipeline_parallel_degree, a.tensor_parallel_degree, a.placement_strategy);
}

void check_parallel_layout(const TrainingArguments& a, const ModelConfig& cfg, const std::string& config_path,
                           const dist::RankGrid& grid, const dist::Layout& layout) {
  using dist::Axis;
  const int pp = grid.size(Axis::Pipeline), tp = grid.size(Axis::Tensor), dp = grid.size(Axis::Data);
  check_pipeline_partition(a, pp, cfg.num_layers, config_path);
  auto divides = [&](int value, const char* what) {
    if (value % tp != 0)
      fail("tensor_parallel_degree ", tp, " does not divide the model's ", what, " (", value, ", ", config_path,
           "): each tensor-parallel rank takes an equal share");
  };
  if (tp > 1) {
    divides(cfg.num_heads, "attention heads");
    divides(cfg.hidden_size, "hidden size");
    divides(cfg.intermediate_size, "feed-forward size");
  }
  if (!a.ddp && dp > 1)
    fail("ddp is false, but ", grid.world_size(), " processes with pipeline ", pp, " x tensor ", tp, " make ", dp,
         " model replicas, which strata keeps in sync by data parallelism: set ddp: true, or start ", pp * tp,
         " processes");
  if (a.processes_per_host > 0 && a.processes_per_host != layout.local_world_size)
    fail("distribution.mpi.processes_per_host is ", a.processes_per_host, " but ", layout.source, " started ",
         layout.local_world_size, " on this host", layout.source == "single process" ? " (no launcher)" : "",
         ": start the job with strata launch -n ", a.processes_per_host, " (or mpirun -npernode ",
         a.processes_per_host, ")");
  // What the configuration asks for and this build does not do yet: stop here, rather than
  // silently run something else (no tensor parallelism).
  if (tp > 1)
    fail("tensor_parallel_degree ", tp, ": tensor parallelism is not implemented yet; this build runs data and "
         "pipeline parallelism with optional optimizer-state and gradient sharding (shard_optimizer_state, "
         "zero_stage) and activation checkpointing / offloading: set tensor_parallel_degree to 1");
}

}  // namespace strata
