// Exit statuses that carry meaning between `strata train` and whoever started it (the job
// runner in src/jobs/, a Slurm batch script, a shell loop).
#pragma once

namespace strata {

// Training stopped early on request (SIGTERM, or SIGUSR1 as mpirun forwards it) after every
// rank finished the same step and a checkpoint of that step was written: run again with
// resume_from_checkpoint to continue. 75 is sysexits.h's EX_TEMPFAIL ("try again later").
constexpr int kExitInterrupted = 75;

}  // namespace strata
