// `strata info DIR`: what a model directory holds and what training it will cost.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <optional>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "kernels/device.h"
#include "kernels/ops.h"
#include "models/registry.h"
#include "train/memory_plan.h"
#include "train/parallel_layout.h"
#include "train/pipeline_partition.h"
#include "util/error.h"

namespace strata::cli {

namespace {

struct InfoOptions {
  std::string dir;
  int batch = 32, seq = 128, eval_batch = 0, dp = 1, zero_stage = 0, pp = 1, microbatches = 1, tp = 1;
  double bucket_mb = 25;
  bool shard_optimizer_state = false, gradient_checkpointing = false, offload_activations = false;
  std::optional<int> gradient_checkpointing_every;
  std::string pipeline = "interleaved";
};

int run_info(const InfoOptions& a) {
  const std::string& dir = a.dir;
  ModelConfig cfg = load_model_config(dir);
  const int B = a.batch, T = a.seq;
  if (B <= 0 || T <= 0) fail("strata info: --batch and --seq must be positive");
  if (a.eval_batch < 0) fail("strata info: --eval-batch must be positive");
  const EvalShape eval{a.eval_batch, T};
  // The layout: data-parallel degree and ZeRO stage (as a job's shard_optimizer_state / zero_stage).
  const int dp = a.dp;
  const int stage = std::max(a.zero_stage, a.shard_optimizer_state ? 1 : 0);
  const double bucket_mb = a.bucket_mb;
  if (dp <= 0) fail("strata info: --dp must be positive");
  if (stage < 0 || stage > 2) fail("strata info: --zero-stage must be 0, 1 or 2");
  if (!(bucket_mb > 0)) fail("strata info: --bucket-mb must be positive");
  // Pipeline stages, as a job's partitions / microbatches / pipeline (auto_partition's split).
  TrainingArguments job;
  job.pipeline_parallel_degree = a.pp;
  job.microbatches = a.microbatches;
  job.pipeline = a.pipeline;
  job.max_seq_length = T;
  if (job.pipeline_parallel_degree <= 0 || job.microbatches <= 0)
    fail("strata info: --pp and --microbatches must be positive");
  const dist::PipelineKind kind = dist::parse_pipeline_kind(job.pipeline);
  // Tensor parallelism: the plan is a rank's, whose table holds its slices (every rank's are
  // the same size). The parameter count below stays the whole model's.
  const int tp = a.tp;
  if (tp <= 0) fail("strata info: --tp must be positive");
  check_tensor_split(cfg, tp, dir + "/config.json");
  // The flat buffers are reserved, never touched: the table costs no memory of note.
  const std::unique_ptr<Model<float>> whole_model = make_model<float>(cfg);
  cfg.tensor_split = {tp, 0};
  const std::unique_ptr<Model<float>> split_model = tp > 1 ? make_model<float>(cfg) : nullptr;
  const Model<float>& rank_model = tp > 1 ? *split_model : *whole_model;
  const size_t n = whole_model->table().total();
  const size_t embedding = n - whole_model->non_embedding_parameters();

  std::printf("model          %s\n", dir.c_str());
  std::printf("architecture   %s (model_type %s)\n", cfg.architecture().c_str(), cfg.model_type.c_str());
  // INT_MAX: relative positions (T5), no table to run out of
  const std::string positions =
      cfg.max_position_embeddings == INT_MAX ? "relative" : std::to_string(cfg.max_position_embeddings);
  // An encoder-decoder's blocks are its encoder's layers, then its decoder's.
  const std::string layers = cfg.decoder_layers > 0
                                 ? cat(cfg.num_layers, " + ", cfg.decoder_layers, " layers (encoder + decoder)")
                                 : cat(cfg.num_layers, " layers");
  std::printf("shape          %s, hidden %d, %d heads, FFN %d, vocab %d, %s positions, act %s\n", layers.c_str(),
              cfg.hidden_size, cfg.num_heads, cfg.intermediate_size, cfg.vocab_size, positions.c_str(),
              cfg.hidden_act.c_str());
  if (cfg.task == Task::SequenceClassification)
    std::printf("head           %d labels, problem_type %s\n", cfg.num_labels,
                cfg.problem_type == ProblemType::Unset ? "(from labels)" : problem_type_name(cfg.problem_type));
  std::printf("cpu kernels    %s (chosen at run time; STRATA_MAX_CPU_ISA caps it)\n", kernels::kernel_isa());
  std::printf("device         %s\n", kernels::describe_device(kernels::Device::cpu()).c_str());
  const int gpus = kernels::cuda_device_count();
  if (gpus == 0) std::printf("device         no GPU: %s\n", kernels::cuda_unavailable_reason().c_str());
  for (int i = 0; i < gpus; ++i)
    std::printf("device         %s\n", kernels::describe_device(kernels::Device::cuda(i)).c_str());
  std::printf("parameters     %zu (%.2fM; %.2fM in embeddings, %.2fM in the rest)\n", n, n / 1e6, embedding / 1e6,
              (n - embedding) / 1e6);
  nn::ActivationPolicy activations;
  if (a.gradient_checkpointing) {
    activations.checkpoint_every = a.gradient_checkpointing_every.value_or(1);
    if (activations.checkpoint_every < 1)
      fail("strata info: --gradient-checkpointing-every must be >= 1, got ", activations.checkpoint_every);
  } else if (a.gradient_checkpointing_every) {
    fail("strata info: --gradient-checkpointing-every needs --gradient-checkpointing");
  }
  activations.offload = a.offload_activations;
  if (job.pipeline_parallel_degree == 1) {
    std::printf("%s",
                format_memory_plan(plan_rank_memory(rank_model, B, T, dp, stage, bucket_mb, 2, activations, eval), B, T)
                    .c_str());
    return 0;
  }
  std::string how;
  const PipelineStages stages(rank_model, partition_blocks(rank_model, job, job.pipeline_parallel_degree,
                                                            dir + "/config.json", &how));
  std::printf("%s  partition: %s\n", stages.describe(rank_model.table()).c_str(), how.c_str());
  std::printf("%s", format_pipeline_memory_plans(rank_model, stages, kind, B, T, job.microbatches, dp, stage,
                                                 bucket_mb, 2, activations, eval)
                        .c_str());
  return 0;
}

}  // namespace

Run define_info(CLI::App& cmd) {
  auto o = std::make_shared<InfoOptions>();
  cmd.add_option("dir", o->dir, "model directory (config.json)")->required()->type_name("DIR");
  cmd.add_option("--batch", o->batch, "examples per batch and rank")->capture_default_str();
  cmd.add_option("--seq", o->seq, "tokens per example")->capture_default_str();
  cmd.add_option("--eval-batch", o->eval_batch,
                 "examples per evaluation batch and rank (as per_device_eval_batch_size; default: --batch, or "
                 "under a pipeline one micro-batch)");
  cmd.add_option("--dp", o->dp, "data-parallel degree")->capture_default_str();
  cmd.add_option("--zero-stage", o->zero_stage, "ZeRO stage: 0, 1 or 2")->capture_default_str();
  cmd.add_flag("--shard-optimizer-state", o->shard_optimizer_state, "ZeRO-1 (as zero-stage 1)");
  cmd.add_option("--bucket-mb", o->bucket_mb, "MiB per gradient bucket (ddp_bucket_cap_mb)")->capture_default_str();
  cmd.add_option("--pp", o->pp, "pipeline stages")->capture_default_str();
  cmd.add_option("--microbatches", o->microbatches, "micro-batches per step")->capture_default_str();
  cmd.add_option("--pipeline", o->pipeline, "simple (GPipe) or interleaved (1F1B)")->capture_default_str();
  cmd.add_option("--tp", o->tp, "tensor-parallel degree")->capture_default_str();
  cmd.add_flag("--gradient-checkpointing", o->gradient_checkpointing, "recompute blocks in backward");
  cmd.add_option("--gradient-checkpointing-every", o->gradient_checkpointing_every, "recompute every k-th block");
  cmd.add_flag("--offload-activations", o->offload_activations, "saved activations to host-memory files");
  return [o](const auto&) { return run_info(*o); };
}

}  // namespace strata::cli
