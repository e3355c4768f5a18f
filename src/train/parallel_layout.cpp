#include "train/parallel_layout.h"

#include "models/architecture.h"
#include "train/pipeline_partition.h"
#include "util/error.h"

namespace strata {

dist::RankGrid make_rank_grid(const TrainingArguments& a, const dist::Layout& layout) {
  return dist::RankGrid(layout.world_size, a.pipeline_parallel_degree, a.tensor_parallel_degree, a.placement_strategy);
}

void check_tensor_split(const ModelConfig& cfg, int tp, const std::string& config_path) {
  auto divides = [&](int value, const char* what) {
    if (value % tp != 0)
      fail("tensor_parallel_degree ", tp, " does not divide the model's ", what, " (", value, ", ", config_path,
           "): each tensor-parallel rank takes an equal share");
  };
  if (tp <= 1) return;
  const Architecture* arch = find_architecture(cfg.model_type);
  if (arch && !arch->tensor_parallel) {
    std::string have;
    for (const Architecture* x : all_architectures())
      if (x->tensor_parallel) have += cat(have.empty() ? "" : ", ", x->model_type);
    fail("tensor_parallel_degree ", tp, ": model_type '", cfg.model_type, "' (", config_path,
         ") has no tensor-parallel layers in this build (they exist for: ", have,
         "); set tensor_parallel_degree to 1, or use pipeline_parallel_degree to split the model");
  }
  divides(cfg.num_heads, "attention heads");
  divides(cfg.hidden_size, "hidden size");
  divides(cfg.intermediate_size, "feed-forward size");
  // Megatron pads the vocabulary to a multiple of the degree; strata keeps HF's vocab_size, so
  // that the saved model is the one HF expects, and asks for a size that divides.
  if (cfg.vocab_size % tp != 0)
    fail("tensor_parallel_degree ", tp, " does not divide the model's vocabulary (vocab_size ", cfg.vocab_size, ", ",
         config_path, "): the embedding and the LM head are split by vocabulary rows; pad vocab_size in config.json "
         "to a multiple of ", tp, " (e.g. ", (cfg.vocab_size + tp - 1) / tp * tp, ")");
}

void check_parallel_layout(const TrainingArguments& a, const ModelConfig& cfg, const std::string& config_path,
                           const dist::RankGrid& grid, const dist::Layout& layout) {
  using dist::Axis;
  const int pp = grid.size(Axis::Pipeline), tp = grid.size(Axis::Tensor), dp = grid.size(Axis::Data);
  check_pipeline_partition(a, pp, cfg.num_layers + cfg.decoder_layers, config_path);
  check_tensor_split(cfg, tp, config_path);
  if (pp > 1 && cfg.task == Task::Seq2SeqLM && a.predict_with_generate)
    fail("predict_with_generate with pipeline_parallel_degree ", pp, ": generating runs the whole model in one "
         "process, and a pipeline stage holds only its own layers; set predict_with_generate: false (evaluation then "
         "reports the loss) or pipeline_parallel_degree: 1");
  if (!a.ddp && dp > 1)
    fail("ddp is false, but ", grid.world_size(), " processes with pipeline ", pp, " x tensor ", tp, " make ", dp,
         " model replicas, which strata keeps in sync by data parallelism: set ddp: true, or start ", pp * tp,
         " processes");
  if (a.processes_per_host > 0 && a.processes_per_host != layout.local_world_size)
    fail("distribution.mpi.processes_per_host is ", a.processes_per_host, " but ", layout.source, " started ",
         layout.local_world_size, " on this host", layout.source == "single process" ? " (no launcher)" : "",
         ": start the job with strata launch -n ", a.processes_per_host, " (or mpirun -npernode ",
         a.processes_per_host, ")");
}

}  // namespace strata
