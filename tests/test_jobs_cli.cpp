// `strata job run` refuses bad input before any work, with one message naming the file, the
// line or the field, and leaves no job directory behind; --dry-run prints the plan only.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "test_util_fs.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using test::expect_command_error;
using test::run_strata;
using test::write_text;

const std::string kTokenizer = test::source_dir() + "/examples/spam/bert-small";

class JobCli : public testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.path("model"));
    test::write_tiny_bert_config(dir_.path("model/config.json"), 0.0);
    write_text(dir_.path("train.csv"), "text,label\n\"win money\",spam\n\"monday notes\",ham\n");
    write_text(dir_.path("train.yaml"), "model_name_or_path: " + dir_.path("model") + "\ntokenizer_name: " + kTokenizer +
                                            "\ntrain_file: " + dir_.path("train.csv") + "\noutput_dir: unused\n"
                                            "max_seq_length: 16\nmax_steps: 2\n");
  }
  // Runs `strata job run` on a spec of `lines` (plus the training config and output path).
  test::CommandResult run(const std::string& lines, std::vector<std::string> flags = {"--job-name", "j1"}) {
    write_text(dir_.path("job.yaml"), "training_config: " + dir_.path("train.yaml") + "\noutput_path: " +
                                          dir_.path("jobs") + "\n" + lines);
    std::vector<std::string> args = {"job", "run", dir_.path("job.yaml")};
    args.insert(args.end(), flags.begin(), flags.end());
    return run_strata(args, dir_);
  }
  void expect_refused(const std::string& lines, const std::vector<std::string>& parts) {
    expect_command_error(run(lines), parts);
    EXPECT_FALSE(fs::exists(dir_.path("jobs"))) << "a refused job left " << dir_.path("jobs");
  }
  test::ScratchDir dir_;
};

TEST_F(JobCli, UnknownKeysGetTheNearestName) {
  expect_refused("instance_type: local.c1\nuse_spot_instance: true\n",
                 {"job.yaml line 4: unknown job option 'use_spot_instance'", "did you mean 'use_spot_instances'"});
  expect_refused("instance_type: local.c1\nhyperparameters: {lerning_rate: 0.1}\n",
                 {"job.yaml hyperparameters:", "unknown option 'lerning_rate'", "did you mean 'learning_rate'"});
}

TEST_F(JobCli, InstanceTypeMustBeInTheCatalog) {
  expect_refused("instance_type: ml.p3.2xlarg\n",
                 {"job.yaml: instance_type 'ml.p3.2xlarg' is not in the instance catalog", "did you mean 'ml.p3.2xlarge'"});
}

TEST_F(JobCli, MaxWaitNeedsSpotAndMustCoverMaxRun) {
  expect_refused("instance_type: local.c1\nuse_spot_instances: true\nmax_run: 600\nmax_wait: 300\n",
                 {"job.yaml line 6: max_wait (300 s) must be at least max_run (600 s)"});
  expect_refused("instance_type: local.c1\nmax_wait: 300\n", {"job.yaml line 4: max_wait", "use_spot_instances: true"});
}

TEST_F(JobCli, CheckpointUriMustBeReachableAndWritable) {
  expect_refused("instance_type: local.c1\ncheckpoint_s3_uri: s3://bucket/spam\n",
                 {"checkpoint_uri 's3://bucket/spam': strata has no client for s3://"});
  write_text(dir_.path("a_file"), "x");
  expect_refused("instance_type: local.c1\ncheckpoint_uri: " + dir_.path("a_file/ckpt") + "\n",
                 {"checkpoint_uri " + dir_.path("a_file/ckpt") + " is unreachable"});
  expect_refused("instance_type: local.c1\ncheckpoint_uri: file:///proc/strata/ckpt\n",
                 {"checkpoint_uri /proc/strata/ckpt is not writable"});
}

TEST_F(JobCli, SlurmBackendNeedsSbatch) {
  const std::string saved = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("PATH", "/nonexistent", 1);
  const auto r = run("instance_type: local.c1\nbackend: slurm\n");
  setenv("PATH", saved.c_str(), 1);
  expect_command_error(r, {"job.yaml: backend slurm needs sbatch, which is not on PATH"});
  EXPECT_FALSE(fs::exists(dir_.path("jobs")));
}

TEST_F(JobCli, HostfileCannotNameMoreSlotsThanExist) {
  write_text(dir_.path("hosts.txt"), "node1 slots=1\nnode2 slots=2\n");
  expect_refused("instance_type: local.c1\ninstance_count: 2\nbackend: hostfile\nhostfile: " + dir_.path("hosts.txt") + "\n",
                 {"hosts.txt line 2: node2 slots=2, but an local.c1 instance has 1 core(s)", "more slots than exist"});
}

TEST_F(JobCli, TheModelMustExistAndFit) {
  expect_refused("instance_type: local.c1\nhyperparameters: {model_name_or_path: " + dir_.path("nope") + "}\n",
                 {dir_.path("nope")});
  expect_refused("instance_type: local.c1\nhyperparameters: {per_device_train_batch_size: 2000000}\n",
                 {"do not fit in an local.c1 instance's 12 GiB", "batch 2000000 x seq 16"});
}

TEST_F(JobCli, DryRunPrintsThePlanAndCreatesNothing) {
  const auto r = run("instance_type: ml.p3.8xlarge\nuse_spot_instances: true\nmax_run: 3600\nmax_wait: 7200\n",
                     {"--job-name", "j1", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {"job           j1\n", "backend       local (this machine, mpirun)\n",
                           "instances     1 x ml.p3.8xlarge (cores 32, GPUs 4, memory 244 GiB)\n",
                           "ranks         4: 4 per instance, 1 thread(s) each\n", "memory        ",
                           "price         4.4064 USD/h (1 x 4.4064 USD/h, spot; on demand 14.688 USD/h)\n",
                           "limits        max_run 3600 s, max_wait 7200 s, grace 120 s\n"})
    EXPECT_NE(r.out.find(line), std::string::npos) << "'" << line << "' not in:\n" << r.out;
  EXPECT_FALSE(fs::exists(dir_.path("jobs")));
}

TEST_F(JobCli, ScriptEntryPointDryRunPrintsItsCommandLine) {
  write_text(dir_.path("train.py"), "import sys\n");
  write_text(dir_.path("script.yaml"), "instance_type: local.c2\nentry_point: " + dir_.path("train.py") +
                                           "\nhyperparameters: {epochs: 3, fp16: true, name: 'a b'}\noutput_path: " +
                                           dir_.path("jobs") + "\n");
  const auto r = run_strata({"job", "run", dir_.path("script.yaml"), "--job-name", "s1", "--dry-run"}, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = {
      "memory        not estimated (the script builds its own model)\n",
      "script        python3 " + dir_.path("train.py") + " --epochs 3 --fp16 True --name 'a b'\n",
      "ranks         1: 1 per instance, 2 thread(s) each\n"};
  for (const std::string& line : lines)
    EXPECT_NE(r.out.find(line), std::string::npos) << "'" << line << "' not in:\n" << r.out;
  EXPECT_EQ(r.out.find("training      "), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_.path("jobs")));
}

TEST_F(JobCli, ScriptEntryPointMustExistAndRunAlone) {
  write_text(dir_.path("train.py"), "import sys\n");
  expect_refused("instance_type: local.c1\nentry_point: " + dir_.path("train.py") + "\n",
                 {"job.yaml line 4: entry_point (a Python script) and training_config", "keep one"});
  // The script alone (no training_config line), missing, or with an interpreter that is not there.
  auto run_script_spec = [&](const std::string& lines) {
    write_text(dir_.path("job.yaml"), "instance_type: local.c1\noutput_path: " + dir_.path("jobs") + "\n" + lines);
    return run_strata({"job", "run", dir_.path("job.yaml")}, dir_);
  };
  expect_command_error(run_script_spec("entry_point: " + dir_.path("missing.py") + "\n"),
                       {"job.yaml line 3: entry_point " + dir_.path("missing.py") + " does not exist"});
  expect_command_error(run_script_spec("entry_point: " + dir_.path("train.py") + "\npython: no-such-python\n"),
                       {"job.yaml: python 'no-such-python' (the interpreter of entry_point) is not on PATH"});
  EXPECT_FALSE(fs::exists(dir_.path("jobs")));
}

TEST_F(JobCli, StatusJsonDescribesTheJobForClientsThatDidNotStartIt) {
  write_text(dir_.path("train.py"), "import os\nopen(os.environ['SM_MODEL_DIR'] + '/config.json', 'w').write('{}')\n");
  write_text(dir_.path("script.yaml"), "instance_type: local.c1\nentry_point: " + dir_.path("train.py") +
                                           "\nhyperparameters: {epochs: 3}\noutput_path: " + dir_.path("jobs") + "\n");
  const auto run = run_strata({"job", "run", dir_.path("script.yaml"), "--job-name", "s1"}, dir_);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const auto r = run_strata({"job", "status", "s1", "--output-path", dir_.path("jobs"), "--json"}, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json s = nlohmann::json::parse(r.out);
  EXPECT_EQ(s["status"], "Completed");
  EXPECT_EQ(s["job_dir"], dir_.path("jobs/s1"));
  EXPECT_EQ(s["working_dir"], fs::current_path().string());  // where the spec's relative paths start
  EXPECT_EQ(s["model_data"], dir_.path("jobs/s1/model"));
  EXPECT_EQ(s["running"], false);
  EXPECT_EQ(s["spec"], nlohmann::json({{"instance_type", "local.c1"}, {"entry_point", dir_.path("train.py")},
                                       {"hyperparameters", {{"epochs", 3}}}, {"output_path", dir_.path("jobs")}}));
  EXPECT_TRUE(fs::exists(dir_.path("jobs/s1/model/config.json")));  // SM_MODEL_DIR, moved into place
  EXPECT_FALSE(fs::exists(dir_.path("jobs/s1/output/model")));
}

}  // namespace
}  // namespace strata
