// `strata info DIR`: what a model directory holds and what training it will cost.
#include <algorithm>
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "kernels/ops.h"
#include "models/registry.h"
#include "train/memory_plan.h"
#include "train/parallel_layout.h"
#include "train/pipeline_partition.h"
#include "util/error.h"

namespace strata::cli {

int cmd_info(int argc, char** argv) {
  const Args a("info", argc, argv,
               {"batch", "seq", "dp", "zero-stage", "bucket-mb", "gradient-checkpointing-every", "pp", "microbatches",
                "pipeline", "tp"},
               {"shard-optimizer-state", "gradient-checkpointing", "offload-activations"});
  if (a.positional().size() != 1) fail("strata info: expected one model directory, e.g. strata info models/bert");
  const std::string dir = a.positional()[0];
  ModelConfig cfg = load_model_config(dir);
  const int B = a.int_or("batch", 32), T = a.int_or("seq", 128);
  if (B <= 0 || T <= 0) fail("strata info: --batch and --seq must be positive");
  // The layout: data-parallel degree and ZeRO stage (as a job's shard_optimizer_state / zero_stage).
  const int dp = a.int_or("dp", 1);
  const int stage = std::max(a.int_or("zero-stage", 0), a.flag_or("shard-optimizer-state", false) ? 1 : 0);
  const double bucket_mb = a.num_or("bucket-mb", 25);
  if (dp <= 0) fail("strata info: --dp must be positive");
  if (stage < 0 || stage > 2) fail("strata info: --zero-stage must be 0, 1 or 2");
  if (!(bucket_mb > 0)) fail("strata info: --bucket-mb must be positive");
  // Pipeline stages, as a job's partitions / microbatches / pipeline (auto_partition's split).
  TrainingArguments job;
  job.pipeline_parallel_degree = a.int_or("pp", 1);
  job.microbatches = a.int_or("microbatches", 1);
  job.pipeline = a.str_or("pipeline", "interleaved");
  job.max_seq_length = T;
  if (job.pipeline_parallel_degree <= 0 || job.microbatches <= 0)
    fail("strata info: --pp and --microbatches must be positive");
  const dist::PipelineKind kind = dist::parse_pipeline_kind(job.pipeline);
  // Tensor parallelism: the plan is a rank's, whose table holds its slices (every rank's are
  // the same size). The parameter count below stays the whole model's.
  const int tp = a.int_or("tp", 1);
  if (tp <= 0) fail("strata info: --tp must be positive");
  check_tensor_split(cfg, tp, dir + "/config.json");
  // The flat buffers are reserved, never touched: the table costs no memory of note.
  const std::unique_ptr<Model<float>> whole_model = make_model<float>(cfg);
  cfg.tensor_split = {tp, 0};
  const std::unique_ptr<Model<float>> split_model = tp > 1 ? make_model<float>(cfg) : nullptr;
  const Model<float>& rank_model = tp > 1 ? *split_model : *whole_model;
  const size_t n = whole_model->table().total();
  size_t embedding = 0;
  for (const auto& e : whole_model->table().entries())
    if (e.name.find("embeddings.") != std::string::npos) embedding += e.numel;

  std::printf("model          %s\n", dir.c_str());
  std::printf("architecture   %s (model_type %s)\n", cfg.architecture().c_str(), cfg.model_type.c_str());
  std::printf("shape          %d layers, hidden %d, %d heads, FFN %d, vocab %d, %d positions, act %s\n",
              cfg.num_layers, cfg.hidden_size, cfg.num_heads, cfg.intermediate_size, cfg.vocab_size,
              cfg.max_position_embeddings, cfg.hidden_act.c_str());
  if (cfg.task == Task::SequenceClassification)
    std::printf("head           %d labels, problem_type %s\n", cfg.num_labels,
                cfg.problem_type == ProblemType::Unset ? "(from labels)" : problem_type_name(cfg.problem_type));
  std::printf("cpu kernels    %s (chosen at run time; STRATA_MAX_CPU_ISA caps it)\n", kernels::kernel_isa());
  std::printf("parameters     %zu (%.2fM; %.2fM in embeddings, %.2fM in the rest)\n", n, n / 1e6, embedding / 1e6,
              (n - embedding) / 1e6);
  nn::ActivationPolicy activations;
  if (a.flag_or("gradient-checkpointing", false)) {
    activations.checkpoint_every = a.int_or("gradient-checkpointing-every", 1);
    if (activations.checkpoint_every < 1)
      fail("strata info: --gradient-checkpointing-every must be >= 1, got ", activations.checkpoint_every);
  } else if (a.has("gradient-checkpointing-every")) {
    fail("strata info: --gradient-checkpointing-every needs --gradient-checkpointing");
  }
  activations.offload = a.flag_or("offload-activations", false);
  if (job.pipeline_parallel_degree == 1) {
    std::printf("%s",
                format_memory_plan(plan_rank_memory(rank_model, B, T, dp, stage, bucket_mb, 2, activations), B, T)
                    .c_str());
    return 0;
  }
  std::string how;
  const PipelineStages stages(rank_model, partition_blocks(rank_model, job, job.pipeline_parallel_degree,
                                                            dir + "/config.json", &how));
  std::printf("%s  partition: %s\n", stages.describe(rank_model.table()).c_str(), how.c_str());
  std::printf("%s", format_pipeline_memory_plans(rank_model, stages, kind, B, T, job.microbatches, dp, stage,
                                                 bucket_mb, 2, activations)
                        .c_str());
  return 0;
}

}  // namespace strata::cli
