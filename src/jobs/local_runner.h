// The local and hostfile backends: the job runner is this process. It runs the attempts one
// after the other (mpirun when there is more than one rank, over the hostfile's hosts for the
// hostfile backend), waits for spot capacity between them, and ends the job.
#pragma once
#include "jobs/job_plan.h"
#include "jobs/job_record.h"

namespace strata::jobs {

// Runs the job to its end; prints the runner's lines and the progress line; returns the
// final status. Ctrl-C (or SIGTERM) is `strata job stop`: the ranks checkpoint and the job
// ends Stopped (ranks that outlast the grace period are killed).
JobStatus run_local_job(const JobPlan& plan, const JobRecord& record);

}  // namespace strata::jobs
