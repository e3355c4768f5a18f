// Child processes of the job runner: the ranks' launcher (mpirun, srun, or a lone
// `strata train`), and the short commands of the Slurm client (sbatch, squeue, scontrol).
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace strata::jobs {

struct ProcessOptions {
  std::string log_path;          // stdout and stderr are appended here
  std::vector<std::string> env;  // "NAME=value" entries added to this process's environment
  // Signals the child starts with ignored (exec keeps that) until it installs a handler:
  // a stop request that comes while mpirun or strata train still starts up is then not the
  // end of it, and the runner repeats the request until the trainer takes it.
  std::vector<int> ignored_signals;
};

// A started child, in a session of its own: a Ctrl-C meant for the runner does not reach the
// ranks before the runner has asked them to checkpoint, and everything the child starts on
// this host (mpirun puts each local rank in a process group of its own) can be found again.
class Process {
 public:
  static Process start(const std::vector<std::string>& argv, const ProcessOptions& options);
  pid_t pid() const { return pid_; }
  void signal(int sig) const;  // to the child itself
  // SIGKILL to every process of its session still alive, the child's or its orphans (ranks
  // whose mpirun died).
  void kill_session() const;
  // The exit status once it has ended (the exit code, or 128 + the signal that killed it, as
  // a shell reports it); nullopt while it runs. Never blocks.
  std::optional<int> poll();

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

struct CommandResult {
  int status;          // as Process::poll reports it; 127 when the program is missing
  std::string output;  // stdout and stderr together
};

// Runs argv to completion (its output captured); for the Slurm client commands.
CommandResult run_command(const std::vector<std::string>& argv);

// True when `program` is an executable file on PATH (or a path to one).
bool on_path(const std::string& program);

}  // namespace strata::jobs
