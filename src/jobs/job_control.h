// What `strata job stop | interrupt | status` do to a job that another process runs: find
// its plan, tell whether its runner is alive, and ask it to stop or to be interrupted.
#pragma once
#include <string>

#include "jobs/job_plan.h"
#include "jobs/job_record.h"

namespace strata::jobs {

JobPlan load_plan(const JobRecord& record);  // plan.json

// The record of job `name_or_dir`: a job directory, or a job name under output_path.
JobRecord find_job(const std::string& name_or_dir, const std::string& output_path);

// Whether something still runs the job: the runner process on this host, or the Slurm job.
bool job_is_alive(const JobRecord& record);

// The ranks finish their step, write a checkpoint and the job ends Stopped. A Slurm job that
// has not started yet is cancelled. Returns what was done, for the user.
std::string stop_job(const JobRecord& record);

// A spot interruption now (spot jobs only, while training): the local runner stops the
// ranks with a checkpoint and restarts them; under Slurm the job is requeued.
std::string interrupt_job(const JobRecord& record);

}  // namespace strata::jobs
