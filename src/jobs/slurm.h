// The Slurm client commands a job uses: sbatch to submit its batch script, squeue (and sacct
// where the cluster keeps accounting) for its state, scontrol to requeue it (a spot
// interruption) and to lower its time limit as max_run is used up, scancel to stop it.
#pragma once
#include <string>

#include "jobs/job_plan.h"

namespace strata::jobs {

// The batch script of a job: #SBATCH --nodes (instance_count), --ntasks-per-node (ranks per
// host), --cpus-per-task (threads per rank), --time (max_run plus the grace period),
// --requeue, --signal=B:TERM@<grace>; its one command is `strata job slurm-step JOB_DIR`,
// which runs the ranks with srun.
std::string slurm_batch_script(const JobPlan& plan);

// Submits the script; returns the Slurm job id. A job the cluster can never run (sbatch
// --test-only) is refused without being queued. Errors carry sbatch's message.
std::string slurm_submit(const std::string& script_path);

struct SlurmState {
  std::string state;   // PENDING, RUNNING, COMPLETED, CANCELLED, ...; "" when Slurm no longer knows the job
  std::string reason;  // why it pends (BeginTime, Resources, ...)
  bool finished() const;  // a state the job does not leave
};
SlurmState slurm_state(const std::string& job_id);

// A spot interruption under Slurm: `scontrol requeue` signals every process of the job and
// queues it again, eligible again after Slurm's requeue delay (about two minutes).
void slurm_requeue(const std::string& job_id);
// Makes a pending job eligible to start `seconds` from now (the return of spot capacity).
void slurm_set_begin(const std::string& job_id, double seconds);
void slurm_cancel(const std::string& job_id);
// Sets the job's time limit (rounded up to whole minutes, Slurm's unit).
void slurm_set_time_limit(const std::string& job_id, double seconds);

// Minutes, rounded up, as --time takes them.
std::string slurm_minutes(double seconds);

}  // namespace strata::jobs
