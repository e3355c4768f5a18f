// The slurm backend. `strata job run` submits the job's batch script and follows the job
// until it ends; every attempt runs inside the allocation as `strata job slurm-step JOB_DIR`,
// which does what the local runner does for one attempt (srun in place of mpirun). A spot
// interruption is a requeue: Slurm signals the job (the ranks checkpoint within the grace
// period), queues it again, and runs the batch script anew, which resumes from the newest
// checkpoint. Slurm's --time backs max_run up; the follower enforces max_wait while the job
// pends and shortens Slurm's requeue delay to the simulated capacity wait.
#pragma once
#include "jobs/job_plan.h"
#include "jobs/job_record.h"

namespace strata::jobs {

// Submits and follows the job; returns its final status, or its current one if the follower
// was interrupted (Ctrl-C leaves the job to Slurm: `strata job status|stop NAME`).
JobStatus run_slurm_job(const JobPlan& plan, const JobRecord& record);

// One attempt inside the allocation; the batch step's exit status.
int run_slurm_step(const JobPlan& plan, const JobRecord& record);

}  // namespace strata::jobs
