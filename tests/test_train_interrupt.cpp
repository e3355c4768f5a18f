// `strata train` stopped by SIGTERM (a spot reclaim, Slurm, kill) finishes its step, writes a
// checkpoint of it and exits 75; resumed from that checkpoint it ends with the parameters of
// the run never stopped, bit for bit. More signals while it stops change nothing. (Through
// mpirun the signal is SIGUSR1: tests/jobs/spot_interruptions.sh.) The run waits for the
// signal after step 100 (STRATA_PAUSE_AT_STEP), so it stops there on any machine.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>

#include "core/exit_status.h"
#include "test_util_fs.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using test::read_text;
using test::write_text;

class TrainInterrupt : public testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.path("model"));
    test::write_tiny_bert_config(dir_.path("model/config.json"), 0.1);
    std::string csv = "text,label\n";
    for (int i = 0; i < 64; ++i)
      csv += std::string("\"") + (i % 3 ? "meeting notes for monday" : "win money now, click") + " " + std::to_string(i) +
             "\"," + (i % 3 ? "ham" : "spam") + "\n";
    write_text(dir_.path("train.csv"), csv);
    write_text(dir_.path("train.yaml"),
               "model_name_or_path: " + dir_.path("model") + "\ntokenizer_name: " + test::source_dir() +
                   "/examples/spam/bert-small\ntrain_file: " + dir_.path("train.csv") +
                   "\nmax_seq_length: 16\nper_device_train_batch_size: 8\nmax_steps: 600\nlogging_steps: 10\n"
                   "save_steps: 1000\nnum_threads: 1\nlearning_rate: 1e-3\nseed: 3\n");
  }
  // Starts `strata train train.yaml --set output_dir=OUT ...`; stdout and stderr to OUT.log;
  // `pause`: STRATA_PAUSE_AT_STEP's value, "" for none.
  pid_t start(const std::string& out, const std::vector<std::string>& sets, const std::string& pause = "") {
    std::vector<std::string> args = {test::strata_binary(), "train", dir_.path("train.yaml"), "--set", "output_dir=" + out};
    for (const auto& s : sets) args.insert(args.end(), {"--set", s});
    const std::string log = out + ".log";
    const pid_t pid = fork();
    if (pid == 0) {
      if (pause.empty()) unsetenv(kPauseAtStepVariable);
      else setenv(kPauseAtStepVariable, pause.c_str(), 1);
      FILE* f = std::fopen(log.c_str(), "w");
      dup2(fileno(f), 1);
      dup2(fileno(f), 2);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    return pid;
  }
  int wait_exit(pid_t pid) {
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  test::ScratchDir dir_;
};

TEST_F(TrainInterrupt, SigtermCheckpointsTheStepAndTheResumeIsExact) {
  ASSERT_EQ(wait_exit(start(dir_.path("reference"), {})), 0) << read_text(dir_.path("reference.log"));

  const std::string out = dir_.path("stopped");
  const pid_t pid = start(out, {}, "100");
  // Once it waits after step 100, stop it, and insist.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (read_text(out + ".log").find(std::string(kPausedLine) + "100;") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  kill(pid, SIGTERM);
  kill(pid, SIGTERM);
  ASSERT_EQ(wait_exit(pid), kExitInterrupted) << read_text(out + ".log");
  std::smatch m;
  const std::string log = read_text(out + ".log");
  ASSERT_TRUE(std::regex_search(log, m, std::regex(R"(stopped after step (\d+) of 600; resume from (\S+))"))) << log;
  const int step = std::stoi(m[1]);
  EXPECT_EQ(step, 100);
  EXPECT_EQ(m[2].str(), out + "/checkpoint-" + std::to_string(step));
  EXPECT_TRUE(fs::exists(m[2].str() + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(out + "/model.safetensors"));  // no final model from a stopped run

  ASSERT_EQ(wait_exit(start(out, {"resume_from_checkpoint=latest"})), 0) << read_text(out + ".log");
  EXPECT_EQ(read_text(out + "/model.safetensors"), read_text(dir_.path("reference/model.safetensors")))
      << "the resumed run ends with other parameters than the uninterrupted one";
}

}  // namespace
}  // namespace strata
