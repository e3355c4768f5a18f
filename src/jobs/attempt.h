// One attempt of a job, the same under every backend: download the checkpoints from
// checkpoint_uri, start the ranks, watch them (upload each new checkpoint, stop requests,
// max_run, max_wait, simulated interruptions), and say how it ended. Then what the job's
// status becomes, and the end of a job (model upload, billing).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "jobs/job_plan.h"
#include "jobs/job_record.h"

namespace strata::jobs {

// Why the runner stopped the ranks, if it did.
enum class StopReason { None, Interrupted, MaxRuntime, MaxWait, Stopped };

struct AttemptLaunch {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // NAME=value added for the launcher
  std::string log_path;          // the launcher's own output
  int stop_signal = 0;           // makes every rank checkpoint and exit: SIGTERM to a lone rank, SIGUSR1 via mpirun/srun
  std::vector<int> ignored_until_started;  // ProcessOptions::ignored_signals
};

struct AttemptHooks {
  // A simulated interruption is due. Unset: the ranks are stopped as an interruption. Under
  // Slurm: the job is requeued, and Slurm's own signal stops them (external_stop).
  std::function<void()> interrupt;
  // Whether something outside the runner asked it to stop (Slurm's SIGTERM to the batch step).
  std::function<bool()> external_stop;
  // Called about every 200 ms while the ranks run.
  std::function<void(double now)> tick;
};

struct AttemptResult {
  int exit_status = 0;
  StopReason reason = StopReason::None;
  double seconds = 0;
};

// `launch_for(plan, resume)`: the launch of the ranks under `plan` (the job's, with this
// attempt's environment), resuming from checkpoint `resume` ("" = none).
AttemptResult run_attempt(const JobPlan& plan, const JobRecord& record, int attempt,
                          const std::function<AttemptLaunch(const JobPlan& plan, const std::string& resume)>& launch_for,
                          const AttemptHooks& hooks);

// The status an attempt leads to (Uploading is the way to Completed).
JobStatus attempt_outcome(const AttemptResult& r);

// The command every rank runs: `strata train <job dir>/training.yaml`, or for a script entry
// point `strata job script-rank <job dir>`, which becomes the script; either resuming from
// checkpoint `resume` ("" = none).
std::vector<std::string> rank_command(const JobPlan& plan, const std::string& resume);

// Ends the job: for Completed, puts the model in <job dir>/model (status Uploading
// meanwhile): output_dir's files for strata train, SM_MODEL_DIR for a script; writes the
// billing into the record, then the final status. Returns the billing report.
std::string finish_job(const JobPlan& plan, const JobRecord& record, JobStatus status, const std::string& message);

// The first line that reads like an error in an attempt's logs, for a Failed job's message.
std::string first_error_line(const std::string& attempt_log_dir);

// Records the job's creation: plan.json, training.yaml (none for a script), spec.yaml and
// status Starting.
void create_record(const JobPlan& plan, const JobRecord& record, const std::string& spec_yaml,
                   const std::string& training_yaml);

}  // namespace strata::jobs
