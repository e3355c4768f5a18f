// Shared by the benchmarks: medians, the machine line, the GPT-2 124M shape, and running a
// measurement in a forked child so that its peak RSS is its own.
#pragma once
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/config.h"
#include "util/median.h"

namespace strata::bench {

using strata::median;

// "AMD EPYC ..., 2 cores online"
inline std::string machine() {
  std::ifstream cpu("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  while (std::getline(cpu, line))
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  return model + ", " + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + " cores online";
}

// The hub's gpt2 (124M) config.json with its LM head, `layers` blocks.
inline ModelConfig gpt2_124m_config(int layers = 12) {
  const nlohmann::json j = {
      {"model_type", "gpt2"},  {"vocab_size", 50257},   {"n_positions", 1024}, {"n_embd", 768},
      {"n_layer", layers},     {"n_head", 12},          {"activation_function", "gelu_new"},
      {"resid_pdrop", 0.1},    {"embd_pdrop", 0.1},     {"attn_pdrop", 0.1},   {"layer_norm_epsilon", 1e-5},
      {"bos_token_id", 50256}, {"eos_token_id", 50256}, {"architectures", {"GPT2LMHeadModel"}}};
  return parse_model_config(j, "bench config");
}

// Runs fn in a forked child and returns its result (a trivially copyable R) and the child's
// peak RSS (MiB). The parent never starts OpenMP or BLAS threads, which do not survive fork().
template <typename R, typename Fn>
bool run_in_child(Fn fn, R* result, double* peak_rss_mib) {
  int fd[2];
  if (pipe(fd) != 0) return false;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    const R r = fn();
    _exit(write(fd[1], &r, sizeof r) == static_cast<ssize_t>(sizeof r) ? 0 : 1);
  }
  close(fd[1]);
  const bool got = read(fd[0], result, sizeof *result) == static_cast<ssize_t>(sizeof *result);
  close(fd[0]);
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  *peak_rss_mib = ru.ru_maxrss / 1024.0;
  return got && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace strata::bench
