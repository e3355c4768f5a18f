// `strata train` with gradient_checkpointing / offload_activations: the job trains exactly as
// without them (same losses, the same model.safetensors byte for byte: the format is
// unchanged), prints the memory plan at its start and the measured peak against the
// prediction at its end (within 10%), and the measured peak really falls. Bad values are
// refused naming the option.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sanitizer_build.h"
#include "test_util_fs.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::expect_command_error;
using test::read_text;
using test::run_strata;
using test::write_text;

const std::string kTokenizer = test::source_dir() + "/examples/spam/bert-small";

std::vector<double> logged_losses(const std::string& out_dir) {
  std::vector<double> losses;
  std::istringstream log(read_text(out_dir + "/trainer_log.jsonl"));
  for (std::string line; std::getline(log, line);) {
    const json e = json::parse(line);
    if (e.contains("loss")) losses.push_back(e["loss"].get<double>());
  }
  return losses;
}

// A 4-layer BERT whose saved activations (batch 32 x 128) are most of what a step holds, so
// that checkpointing's saving stands well above the process's other memory.
class ActivationMemoryCli : public testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.path("model"));
    write_text(dir_.path("model/config.json"),
               json{{"model_type", "bert"}, {"vocab_size", 8000}, {"hidden_size", 64}, {"num_hidden_layers", 4},
                    {"num_attention_heads", 4}, {"intermediate_size", 256}, {"max_position_embeddings", 128},
                    {"pad_token_id", 3}}
                   .dump());
    std::string train = "text,label\n";
    for (int i = 0; i < 64; ++i)
      train += std::string("\"") + (i % 2 ? "win money now, click here" : "meeting notes for monday") + " " +
               std::to_string(i) + "\"," + (i % 2 ? "spam" : "ham") + "\n";
    write_text(dir_.path("train.csv"), train);
  }

  struct Job {
    std::string out_dir, output;
    double measured_mib = 0, predicted_mib = 0;
  };

  Job train(const std::string& name, const std::string& extra, int batch = 32) {
    Job j;
    j.out_dir = dir_.path(name);
    const std::string y = dir_.path(name + ".yaml");
    write_text(y, "model_name_or_path: " + dir_.path("model") + "\ntokenizer_name: " + kTokenizer +
                      "\ntrain_file: " + dir_.path("train.csv") + "\noutput_dir: " + j.out_dir +
                      "\nmax_seq_length: 128\npad_to_max_length: true\nper_device_train_batch_size: " + std::to_string(batch) + "\n"
                      "max_steps: 2\nlogging_steps: 1\nsave_strategy: \"no\"\nnum_threads: 2\nlearning_rate: 1e-3\n"
                      "disable_tqdm: true\n" +
                      extra);
    const test::CommandResult r = run_strata({"train", y}, dir_);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    j.output = r.out + r.err;
    const std::regex peak(R"(memory measured, rank 0: peak RSS ([0-9.]+) MiB;.*; predicted peak ([0-9.]+) MiB)");
    std::smatch m;
    if (std::regex_search(j.output, m, peak)) {
      j.measured_mib = std::stod(m[1]);
      j.predicted_mib = std::stod(m[2]);
    } else {
      ADD_FAILURE() << name << ": no measured peak in the output:\n" << j.output;
    }
    return j;
  }

  test::ScratchDir dir_;
};

TEST_F(ActivationMemoryCli, CheckpointingAndOffloadingTrainTheSameModelInLessMemory) {
  if (test::kAddressSanitizer) GTEST_SKIP() << "peak RSS under AddressSanitizer is not the plan's to predict";
  const Job plain = train("plain", "");
  const Job ckpt = train("ckpt", "gradient_checkpointing: true\n");
  const Job offload = train("offload", "offload_activations: true\n");
  EXPECT_NE(ckpt.output.find("activations recomputed every block"), std::string::npos) << ckpt.output;
  EXPECT_NE(offload.output.find("offload pool"), std::string::npos) << offload.output;
  for (const Job* j : {&plain, &ckpt, &offload}) {
    SCOPED_TRACE(j->out_dir);
    EXPECT_NE(j->output.find("memory plan per rank"), std::string::npos);
    EXPECT_NEAR(j->measured_mib / j->predicted_mib, 1.0, 0.10);
  }
  // The estimate: 4 blocks of 24 MiB kept, against one workspace (checkpointing) or two ring
  // slots (offloading): the measured peaks must show most of that.
  EXPECT_LT(ckpt.measured_mib, plain.measured_mib - 50) << "checkpointing did not lower the peak";
  EXPECT_LT(offload.measured_mib, plain.measured_mib - 30) << "offloading did not lower the peak";
  for (const Job* j : {&ckpt, &offload}) {
    EXPECT_EQ(logged_losses(j->out_dir), logged_losses(plain.out_dir));
    EXPECT_EQ(read_text(j->out_dir + "/model.safetensors"), read_text(plain.out_dir + "/model.safetensors"))
        << j->out_dir << ": the saved model differs from the plain run's";
    EXPECT_EQ(read_text(j->out_dir + "/config.json"), read_text(plain.out_dir + "/config.json"));
  }
}

// Evaluation batches larger than training's grow the buffers an evaluation pass writes (the
// logits, the first block records): the plan counts them at the evaluation's shape, so the
// measured peak stays within 10% of the prediction.
TEST_F(ActivationMemoryCli, EvaluationWithALargerBatchIsPlannedAtItsShape) {
  if (test::kAddressSanitizer) GTEST_SKIP() << "peak RSS under AddressSanitizer is not the plan's to predict";
  const Job eval = train("eval", "validation_file: " + dir_.path("train.csv") +
                                     "\nper_device_eval_batch_size: 64\neval_strategy: steps\neval_steps: 1\n",
                         8);
  EXPECT_NE(eval.output.find("evaluation adds"), std::string::npos) << eval.output;
  EXPECT_NE(eval.output.find("an evaluation pass at 64 x 128"), std::string::npos) << eval.output;
  EXPECT_NEAR(eval.measured_mib / eval.predicted_mib, 1.0, 0.10) << eval.output;
}

TEST_F(ActivationMemoryCli, BadValuesAreRefusedNamingTheOption) {
  const std::string y = dir_.path("bad.yaml");
  write_text(y, "model_name_or_path: " + dir_.path("model") + "\ntrain_file: " + dir_.path("train.csv") +
                    "\noutput_dir: " + dir_.path("out") + "\n");
  expect_command_error(run_strata({"train", y, "--set", "gradient_checkpointing=true", "--set",
                                   "gradient_checkpointing_every=0"},
                                  dir_),
                       {"gradient_checkpointing_every must be at least 1", "got 0"});
  expect_command_error(run_strata({"train", y, "--set", "gradient_checkpointing_every=2"}, dir_),
                       {"gradient_checkpointing_every is 2 but gradient_checkpointing is false"});
  expect_command_error(run_strata({"train", y, "--set", "offload_activations=maybe"}, dir_),
                       {"offload_activations", "true or false"});
  EXPECT_FALSE(fs::exists(dir_.path("out")));
}

}  // namespace
}  // namespace strata
