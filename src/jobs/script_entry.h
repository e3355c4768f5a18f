// A Python script as a job's entry point, run as SageMaker's training toolkit runs one: every
// rank runs `<python> <script> --name value ...` (the hyperparameters) with the SM_* variables
// a SageMaker script reads (SM_MODEL_DIR, SM_HPS, SM_HOSTS, SM_CURRENT_HOST, SM_TRAINING_ENV,
// ...), plus strata's own: SM_CHECKPOINT_DIR, where the runner uploads checkpoints from, and
// STRATA_RESUME_FROM_CHECKPOINT, the checkpoint an attempt after an interruption resumes from.
// The ranks start as `strata job script-rank JOB_DIR`, which sets the variables of its rank
// and replaces itself with the script, so the runner's stop signals reach the script itself.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "jobs/job_plan.h"
#include "jobs/job_spec.h"

namespace strata::jobs {

// Names a script reads and strata sets: the checkpoint directory (SageMaker has no variable
// for checkpoint_local_path), and the checkpoint to resume from (absent on a fresh start).
constexpr const char* kCheckpointDirVariable = "SM_CHECKPOINT_DIR";
constexpr const char* kResumeVariable = "STRATA_RESUME_FROM_CHECKPOINT";

// The hyperparameters as the toolkit passes them: `--name value` each, names sorted, a
// one-letter name as `-n`. Values as written in the spec, except YAML's true, false and null,
// which become Python's True, False and None (the toolkit passes str() of each value).
std::vector<std::string> script_arguments(const NameValues& hyperparameters);

// The hyperparameters with their YAML types, for SM_HPS: {"epochs": 3, "lr": 0.1, ...}.
nlohmann::json typed_hyperparameters(const NameValues& hyperparameters, const std::string& source);

// Where a rank runs: its rank, the job's hosts (SageMaker's algo-1..N on the local backend,
// whose instances are all this machine; the hostfile's hosts; the Slurm allocation's nodes)
// and its own host.
struct RankPlace {
  int rank = 0;
  std::vector<std::string> hosts;
  std::string current_host;
};
using EnvLookup = std::function<const char*(const char* name)>;
// `env` reads the rank's environment (mpirun's OMPI_COMM_WORLD_RANK, srun's SLURM_PROCID and
// SLURMD_NODENAME); `expand_nodelist` turns SLURM_JOB_NODELIST into node names.
RankPlace rank_place(const JobPlan& plan, const EnvLookup& env,
                     const std::function<std::vector<std::string>(const std::string&)>& expand_nodelist);

// The rank's variables, NAME=value. `channels`: the SM_CHANNEL_<NAME> variables the job's
// environment sets (fit(inputs=...)), as (name in lower case, path); `resume`: the checkpoint
// to resume from, "" for none.
std::vector<std::string> script_environment(const JobPlan& plan, const RankPlace& place, const std::string& resume,
                                            const std::vector<std::pair<std::string, std::string>>& channels);

// The SM_CHANNEL_<NAME> variables of this process's environment.
std::vector<std::pair<std::string, std::string>> channels_in_environment();

// The argv of the script: python, the entry point, its arguments.
std::vector<std::string> script_argv(const JobPlan& plan);

// Sets `env` and replaces this process with the script, every signal unblocked (those the
// launcher started it with ignored stay ignored until the script's Trainer takes them).
// Returns only by throwing: the interpreter could not be run.
[[noreturn]] void exec_script(const JobPlan& plan, const std::vector<std::string>& env);

}  // namespace strata::jobs
