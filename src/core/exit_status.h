// What carries meaning between `strata train` and whoever started it (the job runner in
// src/jobs/, a Slurm batch script, a shell loop): exit statuses, and the one variable the
// runner sets for the ranks.
#pragma once

namespace strata {

// Training stopped early on request (SIGTERM, or SIGUSR1 as mpirun forwards it) after every
// rank finished the same step and a checkpoint of that step was written: run again with
// resume_from_checkpoint to continue. 75 is sysexits.h's EX_TEMPFAIL ("try again later").
constexpr int kExitInterrupted = 75;

// STRATA_PAUSE_AT_STEP=N: after step N every rank waits (up to kPauseSeconds) for a stop
// request, and rank 0 logs kPausedLine followed by N. The job runner sets it for a simulated
// interruption {at_step: N} and fires the interruption when it reads that line, so the stop
// lands after step N however fast the machine is; tests set it to stop a job at a known step.
constexpr const char* kPauseAtStepVariable = "STRATA_PAUSE_AT_STEP";
constexpr const char* kPausedLine = "paused for an interruption after step ";
constexpr double kPauseSeconds = 300;

}  // namespace strata
