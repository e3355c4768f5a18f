// Shared by the model-level test files: per-test scratch directories, small file helpers,
// and running the `strata` binary with its stderr captured.
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "util/error.h"
#include "test_paths.h"

namespace strata::test {

namespace fs = std::filesystem;

inline std::string fixture(const std::string& name) { return test::fixture_dir() + "/" + name; }
// A tokenizer directory of fixtures/tokenizers/reference (bert-wordpiece-8k, bpe-8k, gpt2, ...).
inline std::string reference_tokenizer(const std::string& name) { return fixture("tokenizers/reference/" + name); }

// A fresh directory named after the running test (and pid, so parallel ctest runs do not
// collide); removed on destruction so no test sees another's files.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string("strata_") + info->test_suite_name() + "_" + info->name();
    for (char& c : name)
      if (c == '/') c = '_';  // parameterised test names contain '/'
    path_ = fs::path(::testing::TempDir()) / (name + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() { fs::remove_all(path_); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  std::string path(const std::string& rel = "") const { return rel.empty() ? path_.string() : (path_ / rel).string(); }
  // Every entry below the directory, relative and sorted: "nothing half-written" checks compare these.
  std::vector<std::string> listing() const {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(path_)) out.push_back(fs::relative(e.path(), path_).string());
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  fs::path path_;
};

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  ASSERT_TRUE(f.good()) << "cannot write " << path;
}

// A toy spam / ham job's data in `dir`: train.csv (24 rows of two phrasings), val.csv (3 rows).
inline void write_toy_spam_csvs(const ScratchDir& dir) {
  std::string train = "text,label\n";
  for (int i = 0; i < 24; ++i)
    train += std::string("\"") + (i % 2 ? "win money now, click here" : "meeting notes for monday") + " " +
             std::to_string(i) + "\"," + (i % 2 ? "spam" : "ham") + "\n";
  write_text(dir.path("train.csv"), train);
  write_text(dir.path("val.csv"), "text,label\n\"win money\",spam\n\"monday notes\",ham\n\"click to win\",spam\n");
}

// A copy of a fixture model directory that a test may then damage.
inline std::string copy_fixture_dir(const std::string& name, const ScratchDir& dir) {
  const std::string dst = dir.path(name);
  fs::copy(fixture(name), dst, fs::copy_options::recursive);
  return dst;
}

// config.json of a 1-layer BERT of hidden 32 with `dropout` on its hidden states and
// attention: no weights, so `strata train` initialises it at random.
inline void write_tiny_bert_config(const std::string& path, double dropout) {
  write_text(path, "{\"model_type\": \"bert\", \"vocab_size\": 8000, \"hidden_size\": 32, \"num_hidden_layers\": 1, "
                   "\"num_attention_heads\": 2, \"intermediate_size\": 64, \"max_position_embeddings\": 64, "
                   "\"pad_token_id\": 3, \"hidden_dropout_prob\": " + std::to_string(dropout) +
                   ", \"attention_probs_dropout_prob\": " + std::to_string(dropout) + "}");
}

struct CommandResult {
  int exit_code;  // -1 if the process did not exit normally
  std::string out, err;
};

// Runs `strata ARGS` through the shell with stdout and stderr sent to files in `dir`.
// Arguments are single-quoted; test paths never contain quotes.
inline CommandResult run_strata(const std::vector<std::string>& args, const ScratchDir& dir) {
  const std::string out = dir.path("cmd.stdout"), err = dir.path("cmd.stderr");
  // Appended piece by piece: `"'" + strata_binary()` trips GCC 12's -Wrestrict false positive.
  std::string cmd = "'";
  cmd += test::strata_binary();
  cmd += "'";
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " >'" + out + "' 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  CommandResult r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(out), read_text(err)};
  fs::remove(out);
  fs::remove(err);
  return r;
}

// Runs `f`, which must throw strata::Error whose message contains every one of `parts`.
inline void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
    return;
  }
  ADD_FAILURE() << "no strata::Error thrown";
}

// `result` of a command that must fail: a non-zero exit, and every one of `parts` in its stderr.
inline void expect_command_error(const CommandResult& result, const std::vector<std::string>& parts) {
  EXPECT_NE(result.exit_code, 0) << result.err;
  for (const auto& p : parts) EXPECT_NE(result.err.find(p), std::string::npos) << "'" << p << "' not in: " << result.err;
}

}  // namespace strata::test
