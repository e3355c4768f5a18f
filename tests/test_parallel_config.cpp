// The distribution options of a job YAML (train/distribution_args.h): SageMaker's
// `distribution` dict, the flat HF form, HF's `deepspeed` config (its ZeRO stage), and the
// errors for every kind of mistake. The checks that need the process count and the model run
// under mpirun in tests/mpi/parallel_config_errors.sh.
#include <gtest/gtest.h>

#include <string>

#include "train/training_args.h"
#include "test_util_fs.h"
#include "util/error.h"

namespace strata {
namespace {

const std::string kBase = "model_name_or_path: m\noutput_dir: o\ndo_train: false\nper_device_train_batch_size: 8\n";

TrainingArguments parse(const std::string& extra) { return parse_training_arguments(kBase + extra, "job.yaml"); }

std::string error_of(const std::string& extra) {
  try {
    parse(extra);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_ERROR(extra, text) EXPECT_NE(error_of(extra).find(text), std::string::npos) << error_of(extra)

// The issue's example, as the SageMaker Estimator takes it.
TEST(ParallelConfig, SageMakerDistributionBlock) {
  const TrainingArguments a = parse(R"(distribution:
  smdistributed:
    modelparallel:
      enabled: true
      parameters: {partitions: 2, microbatches: 4, pipeline: simple, placement_strategy: spread, ddp: true,
                   tensor_parallel_degree: 2, shard_optimizer_state: true, optimize: speed, auto_partition: false,
                   default_partition: 1, activation_checkpointing: 2, offload_activations: true}
  mpi: {enabled: true, processes_per_host: 8}
)");
  EXPECT_EQ(a.pipeline_parallel_degree, 2);
  EXPECT_EQ(a.microbatches, 4);
  EXPECT_EQ(a.pipeline, "simple");
  EXPECT_EQ(a.placement_strategy, "spread");
  EXPECT_TRUE(a.ddp);
  EXPECT_EQ(a.tensor_parallel_degree, 2);
  EXPECT_TRUE(a.shard_optimizer_state);
  EXPECT_EQ(a.sharding_stage(), 1);
  EXPECT_EQ(a.optimize, "speed");
  EXPECT_FALSE(a.auto_partition);
  EXPECT_EQ(a.default_partition, 1);
  EXPECT_TRUE(a.gradient_checkpointing);
  EXPECT_EQ(a.gradient_checkpointing_every, 2);
  EXPECT_TRUE(a.offload_activations);
  EXPECT_EQ(a.processes_per_host, 8);
  // The PyTorch spelling of partitions, and activation_checkpointing as a flag.
  const TrainingArguments b = parse(
      "distribution: {smdistributed: {modelparallel: {enabled: true, parameters: {pipeline_parallel_degree: 3, "
      "activation_checkpointing: true}}}}\n");
  EXPECT_EQ(b.pipeline_parallel_degree, 3);
  EXPECT_TRUE(b.gradient_checkpointing);
  EXPECT_EQ(b.gradient_checkpointing_every, 1);
  // Disabled: the parameters are checked but not applied.
  const TrainingArguments c =
      parse("distribution: {smdistributed: {modelparallel: {enabled: false, parameters: {partitions: 4}}}}\n");
  EXPECT_EQ(c.pipeline_parallel_degree, 1);
  // The data-parallel-only forms keep working.
  EXPECT_TRUE(parse("distribution: {dataparallel: {enabled: true}}\n").dataparallel_enabled);
  EXPECT_TRUE(parse("distribution: {smdistributed: {dataparallel: {enabled: true}}}\n").dataparallel_enabled);
}

TEST(ParallelConfig, FlatHfFormAndDeepSpeedStage) {
  const TrainingArguments a =
      parse("pipeline_parallel_degree: 2\ntensor_parallel_degree: 4\ngradient_checkpointing: true\nzero_stage: 2\n");
  EXPECT_EQ(a.pipeline_parallel_degree, 2);
  EXPECT_EQ(a.tensor_parallel_degree, 4);
  EXPECT_TRUE(a.gradient_checkpointing);
  EXPECT_EQ(a.sharding_stage(), 2);
  EXPECT_EQ(parse("deepspeed: {zero_optimization: {stage: 2}}\n").sharding_stage(), 2);
  // shard_optimizer_state alone is stage 1; with a stage-2 DeepSpeed config, stage 2.
  EXPECT_EQ(parse("shard_optimizer_state: true\n").sharding_stage(), 1);
  EXPECT_EQ(parse("shard_optimizer_state: true\ndeepspeed: {zero_optimization: {stage: 2}}\n").sharding_stage(), 2);
  // HF's --deepspeed takes the path of a JSON file.
  const test::ScratchDir dir;
  test::write_text(dir.path("ds.json"), R"({"zero_optimization": {"stage": 1}})");
  EXPECT_EQ(parse("deepspeed: " + dir.path("ds.json") + "\n").sharding_stage(), 1);
  test::write_text(dir.path("bad.json"), R"({"zero_optimization": {"stage": 2}, "optimizer": {"type": "AdamW"}})");
  EXPECT_ERROR("deepspeed: " + dir.path("bad.json") + "\n", "bad.json line 1: deepspeed.optimizer: strata reads only "
                                                            "zero_optimization.stage, fp16 and bf16 from a DeepSpeed config");
}

// DeepSpeed's fp16 / bf16 blocks set the mixed-precision flags and fp16's loss scaler; "auto"
// (HF's integration) keeps the TrainingArguments value.
TEST(ParallelConfig, DeepSpeedPrecisionBlocksSetTheMixedPrecisionFlags) {
  const TrainingArguments fp16 = parse(
      "deepspeed: {fp16: {enabled: true, loss_scale: 0, initial_scale_power: 12, loss_scale_window: 1000, "
      "hysteresis: 2, min_loss_scale: 1}}\n");
  EXPECT_TRUE(fp16.fp16);
  EXPECT_FALSE(fp16.bf16);
  EXPECT_EQ(fp16.fp16_init_scale, 4096);
  EXPECT_EQ(fp16.fp16_growth_interval, 1000);
  EXPECT_EQ(fp16.ignored_options,
            (std::vector<std::string>{"deepspeed.fp16.hysteresis", "deepspeed.fp16.min_loss_scale"}));
  EXPECT_TRUE(parse("deepspeed: {bf16: {enabled: true}}\n").bf16);
  EXPECT_TRUE(parse("deepspeed: {bfloat16: {enabled: true}}\n").bf16);
  EXPECT_FALSE(parse("deepspeed: {bf16: {enabled: auto}}\n").bf16);
  EXPECT_TRUE(parse("bf16: true\ndeepspeed: {bf16: {enabled: auto}}\n").bf16);
  EXPECT_ERROR("deepspeed: {fp16: {enabled: true, loss_scale: 128}}\n", "a static loss scale is not implemented");
  EXPECT_ERROR("deepspeed: {fp16: {enabled: true, initial_scale: 16}}\n",
               "unknown key deepspeed.fp16.initial_scale (expected one of enabled, loss_scale, initial_scale_power");
  EXPECT_ERROR("deepspeed: {fp16: {enabled: true}, bf16: {enabled: true}}\n", "bf16 and fp16 are both true");
}

TEST(ParallelConfig, UnknownKeysSuggestTheNearestName) {
  EXPECT_ERROR("distributon: {}\n", "did you mean 'distribution'");
  EXPECT_ERROR("distribution: {smdistributd: {}}\n", "unknown key distribution.smdistributd; did you mean 'smdistributed'");
  EXPECT_ERROR("distribution: {smdistributed: {modelparalel: {enabled: true}}}\n",
               "did you mean 'modelparallel'");
  EXPECT_ERROR("distribution: {modelparallel: {enabled: true, paramters: {}}}\n",
               "unknown key distribution.modelparallel.paramters; did you mean 'parameters'");
  EXPECT_ERROR("distribution: {modelparallel: {enabled: true, parameters: {placement_stategy: spread}}}\n",
               "job.yaml line 5: unknown key distribution.modelparallel.parameters.placement_stategy; did you mean "
               "'placement_strategy'");
  EXPECT_ERROR("distribution: {mpi: {enabled: true, processes_per_hots: 2}}\n", "did you mean 'processes_per_host'");
  EXPECT_ERROR("deepspeed: {zero_optimisation: {stage: 1}}\n", "did you mean 'zero_optimization'");
  EXPECT_ERROR("deepspeed: {zero_optimization: {stag: 1}}\n", "did you mean 'stage'");
  EXPECT_ERROR("zero_stag: 1\n", "did you mean 'zero_stage'");
}

TEST(ParallelConfig, BadValuesAndCombinations) {
  const std::string mp = "distribution: {smdistributed: {modelparallel: {enabled: true, parameters: ";
  EXPECT_ERROR(mp + "{memory_weight: 0.5}}}}\n", "is an option of SageMaker's model-parallel library that strata does "
                                                 "not implement");
  EXPECT_ERROR(mp + "{partitions: 2, pipeline_parallel_degree: 4}}}}\n",
               "pipeline_parallel_degree is 4 but partitions is 2: they are the same option");
  EXPECT_ERROR(mp + "{microbatches: 3}}}}\n", "microbatches (3) must divide per_device_train_batch_size (8)");
  EXPECT_ERROR(mp + "{pipeline: 1f1b}}}}\n", "pipeline is '1f1b'; expected simple");
  EXPECT_ERROR(mp + "{placement_strategy: DPQ}}}}\n", "placement_strategy 'DPQ' is not cluster, spread or a "
                                                      "permutation of the letters D, P, T");
  EXPECT_ERROR(mp + "{optimize: fast}}}}\n", "optimize is 'fast'; expected memory or speed");
  EXPECT_ERROR(mp + "{partitions: two}}}}\n", "job.yaml line 5: distribution.smdistributed.modelparallel.parameters."
                                             "partitions expects an integer");
  EXPECT_ERROR(mp + "{shard_optimizer_state: maybe}}}}\n",
               "job.yaml line 5 (distribution.smdistributed.modelparallel.parameters.shard_optimizer_state): option "
               "'shard_optimizer_state' expects true or false");
  EXPECT_ERROR(mp + "{activation_checkpointing: sometimes}}}}\n",
               "activation_checkpointing expects true, false, or k >= 1");
  EXPECT_ERROR(mp + "{partitions: 2, auto_partition: false, default_partition: 2}}}}\n",
               "default_partition 2 is not a pipeline stage (0 .. 1)");
  EXPECT_ERROR("distribution: {smdistributed: {modelparallel: {parameters: {partitions: 2}}}}\n",
               "needs enabled: true (or false)");
  EXPECT_ERROR("distribution: {smdistributed: {dataparallel: {enabled: true}, modelparallel: {enabled: true}}}\n",
               "enables both dataparallel and modelparallel");
  EXPECT_ERROR("distribution: {smdistributed: {modelparallel: {enabled: true}}, mpi: {enabled: false}}\n",
               "distribution.mpi.enabled is false, but modelparallel runs its processes through MPI");
  EXPECT_ERROR("distribution: {mpi: {enabled: true, custom_mpi_options: '-x FOO'}}\n",
               "custom_mpi_options: strata does not start the processes itself");
  EXPECT_ERROR("deepspeed: {zero_optimization: {stage: 3}}\n", "ZeRO stage 3 (parameter sharding) is not implemented");
  EXPECT_ERROR("zero_stage: 5\n", "zero_stage must be 0, 1 or 2, got 5");
  EXPECT_ERROR("tensor_parallel_degree: 0\n", "tensor_parallel_degree must be at least 1, got 0");
  EXPECT_ERROR("distribution: [1, 2]\n", "distribution must be a mapping");
}

}  // namespace
}  // namespace strata
