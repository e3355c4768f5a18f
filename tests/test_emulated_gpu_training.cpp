// `strata train` on the emulated GPU (kernels/emulated_gpu.h) against the same job on the CPU:
// the model, optimizer state, checkpoints, evaluation and predictions must be the same bytes.
// The emulated GPU runs the CPU's kernels on memory the host may not touch, so equal results
// show that the Trainer moves every batch, weight, output and checkpoint through the device
// seam (uploads, downloads) and nowhere else; a real GPU then differs only by its kernels,
// which tests/gpu/test_backend_ops.cpp checks. CTest runs these with STRATA_EMULATED_GPU=1.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/files.h"
#include "kernels/device.h"
#include "kernels/emulated_gpu.h"
#include "test_paths.h"
#include "test_util_fs.h"
#include "train/device_choice.h"

namespace strata {
namespace {

using test::run_strata;
using test::write_text;

class TrainOnEmulatedGpu : public testing::Test {
 protected:
  void SetUp() override {
    if (!kernels::emulated::enabled()) GTEST_SKIP() << "STRATA_EMULATED_GPU=1 not set";
    write_data();
  }
  void write_data() {
    std::filesystem::create_directories(dir_.path("model"));
    write_text(dir_.path("model/config.json"),
               nlohmann::json{{"model_type", "bert"}, {"vocab_size", 8000}, {"hidden_size", 32},
                              {"num_hidden_layers", 2}, {"num_attention_heads", 2}, {"intermediate_size", 64},
                              {"max_position_embeddings", 64}, {"pad_token_id", 3}}
                   .dump());
    test::write_toy_spam_csvs(dir_);
  }

  // A job into `out` (dropout on: the config's default 0.1), with `extra` lines.
  std::string job(const std::string& name, const std::string& out, const std::string& extra, int steps = 4) {
    const std::string y = dir_.path(name);
    write_text(y, "model_name_or_path: " + dir_.path("model") + "\ntokenizer_name: " + test::source_dir() +
                      "/examples/spam/bert-small\ntrain_file: " + dir_.path("train.csv") +
                      "\nvalidation_file: " + dir_.path("val.csv") + "\ntest_file: " + dir_.path("val.csv") +
                      "\ndo_predict: true\noutput_dir: " + dir_.path(out) +
                      "\nmax_seq_length: 16\nper_device_train_batch_size: 8\nmax_steps: " + std::to_string(steps) +
                      "\nlogging_steps: 2\n"
                      "eval_strategy: steps\neval_steps: 2\nsave_steps: 2\nnum_threads: 2\nlearning_rate: 1e-3\n"
                      "seed: 7\n" + (extra.find("replica_threads") == std::string::npos ? "replica_threads: 1\n" : "") +
                      extra);
    return y;
  }

  void train(const std::string& yaml) {
    const test::CommandResult r = run_strata({"train", yaml}, dir_);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // The files of two runs that must be equal byte for byte.
  void expect_same_run(const std::string& a, const std::string& b, const std::string& what) {
    for (const char* f : {"model.safetensors", "checkpoint-2/model.safetensors", "checkpoint-2/optimizer.safetensors",
                          "checkpoint-4/optimizer.safetensors", "predict_results.txt"})
      EXPECT_TRUE(io::read_file(dir_.path(a + "/" + f)) == io::read_file(dir_.path(b + "/" + f)))
          << what << ": " << f << " differs";
    // Every logged value (losses, gradient norms, evaluation metrics) but the times.
    auto history = [&](const std::string& run) {
      nlohmann::json h = nlohmann::json::parse(io::read_file(dir_.path(run + "/trainer_state.json")))["log_history"];
      for (auto& entry : h)
        for (auto it = entry.begin(); it != entry.end();)
          it = it.key().find("runtime") != std::string::npos || it.key().find("per_second") != std::string::npos
                   ? entry.erase(it)
                   : std::next(it);
      return h;
    };
    EXPECT_EQ(history(a), history(b)) << what;
  }

  // Steps 1-4, and steps 3-4 resumed from the first run's checkpoint-2: the same bytes.
  void expect_resume_equals_uninterrupted() {
    train(job("whole.yaml", "whole", ""));
    std::filesystem::create_directories(dir_.path("resumed"));
    std::filesystem::copy(dir_.path("whole/checkpoint-2"), dir_.path("resumed/checkpoint-2"),
                          std::filesystem::copy_options::recursive);
    train(job("resumed.yaml", "resumed", "resume_from_checkpoint: " + dir_.path("resumed/checkpoint-2") + "\n"));
    for (const char* f : {"model.safetensors", "checkpoint-4/optimizer.safetensors"})
      EXPECT_TRUE(io::read_file(dir_.path(std::string("whole/") + f)) ==
                  io::read_file(dir_.path(std::string("resumed/") + f)))
          << f;
  }

  test::ScratchDir dir_;
};

TEST_F(TrainOnEmulatedGpu, ItIsTheGpuARankTrainsOnUnlessUseCpu) {
  TrainingArguments a;
  EXPECT_EQ(training_device(a, 0, 1), kernels::Device::cuda(0));
  a.use_cpu = true;
  EXPECT_EQ(training_device(a, 0, 1), kernels::Device::cpu());
}

// Dropout, gradient accumulation with clipping and a schedule, fp16 with loss scaling (the
// emulated products' rounding), activation checkpointing and offloading.
TEST_F(TrainOnEmulatedGpu, EveryOptionTrainsAsOnTheCpuBitForBit) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"plain", ""},
      {"accumulation", "gradient_accumulation_steps: 2\nmax_grad_norm: 0.5\nlr_scheduler_type: cosine\nwarmup_steps: 1\n"},
      {"fp16", "fp16: true\nhalf_precision_backend: emulated\n"},
      {"checkpointing", "gradient_checkpointing: true\n"},
      {"offloading", "offload_activations: true\n"},
  };
  for (const auto& [name, extra] : cases) {
    train(job(name + "-gpu.yaml", name + "-gpu", extra));
    train(job(name + "-cpu.yaml", name + "-cpu", extra + "use_cpu: true\n"));
    expect_same_run(name + "-gpu", name + "-cpu", name);
  }
}

TEST_F(TrainOnEmulatedGpu, AResumeEqualsTheUninterruptedRun) { expect_resume_equals_uninterrupted(); }

TEST_F(TrainOnEmulatedGpu, WhatDoesNotRunOnAGpuYetIsRefusedSayingWhy) {
  test::expect_command_error(run_strata({"train", job("replicas.yaml", "replicas", "replica_threads: 2\n")}, dir_),
                             {"replica_threads", "on a GPU a batch's rows run at once already"});
}

// The memory plan is checked against the GPU's memory, not the host's: a batch too big for a GPU
// of 12 MiB is refused before the first step, with a smaller batch that fits.
TEST_F(TrainOnEmulatedGpu, APlanTooBigForTheGpuIsRefusedWithOneThatFits) {
  setenv("STRATA_EMULATED_GPU_MEMORY", "0.012", 1);
  const test::CommandResult r = run_strata(
      {"train", job("big.yaml", "big", ""), "--per_device_train_batch_size", "64", "--max_seq_length", "64"}, dir_);
  unsetenv("STRATA_EMULATED_GPU_MEMORY");
  test::expect_command_error(r, {"the memory plan does not fit", "on cuda:0 (emulated GPU", "it holds there now",
                                 "Settings that fit: per_device_train_batch_size: "});
  EXPECT_FALSE(std::filesystem::exists(dir_.path("big/checkpoint-2")));
}

// The same on a real GPU (CTest label gpu; skipped without one): 20 steps with dropout within
// fp32 rounding of the CPU's (the GPU's kernels sum in another order; TF32 off), the dropout
// masks being the same; a resume on the GPU bit for bit the uninterrupted run.
class TrainOnGpu : public TrainOnEmulatedGpu {
 protected:
  void SetUp() override {
    if (kernels::emulated::enabled() || kernels::cuda_device_count() == 0)
      GTEST_SKIP() << "no GPU: " << kernels::cuda_unavailable_reason();
    write_data();
  }
  std::vector<double> losses(const std::string& run) {
    std::vector<double> out;
    for (const auto& e : nlohmann::json::parse(io::read_file(dir_.path(run + "/trainer_state.json")))["log_history"])
      if (e.contains("loss")) out.push_back(e["loss"].get<double>());
    return out;
  }
};

TEST_F(TrainOnGpu, TwentyStepsWithDropoutFollowTheCpu) {
  train(job("gpu.yaml", "gpu", "", 20));
  train(job("cpu.yaml", "cpu", "use_cpu: true\n", 20));
  const std::vector<double> g = losses("gpu"), c = losses("cpu");
  ASSERT_EQ(g.size(), 10u);
  ASSERT_EQ(c.size(), g.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], c[i], 2e-4) << "logged loss " << i;  // logged to 4 places
}

TEST_F(TrainOnGpu, AResumeEqualsTheUninterruptedRun) { expect_resume_equals_uninterrupted(); }

}  // namespace
}  // namespace strata
