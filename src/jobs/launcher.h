// Turns "N processes per host on these hosts" into the mpirun command that starts them:
// mapping, core binding, threads per rank (cores / ranks per host), environment forwarding.
// No home-made process manager: OpenMPI's mpirun does the work (and srun under Slurm).
#pragma once
#include <string>
#include <vector>

namespace strata::jobs {

struct LaunchSpec {
  int procs_per_host = 1;
  std::vector<std::string> hosts;  // empty: this machine only
  std::string hostfile;            // OpenMPI hostfile ("host slots=N" lines)
  int cores_per_host = 0;          // 0: this machine's core count
  std::string mpirun = "mpirun";
  std::vector<std::string> extra_mpirun_args;  // passed through before the command
  std::vector<std::string> command;            // e.g. {"strata", "train", "job.yaml"}
};

// The argv of the mpirun invocation (argv[0] = spec.mpirun).
std::vector<std::string> mpirun_argv(const LaunchSpec& spec);

// Shell-quoted, for --dry-run and logs.
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace strata::jobs
