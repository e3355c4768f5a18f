// Collectives between GPU ranks over NCCL, one process per GPU (issue 27), behind the same
// Communicator interface as MPI. NCCL carries the data path: a collective, send or receive
// whose buffer is memory of the current GPU. Everything else goes to `control`, the MPI
// communicator of the same ranks: the start-up (rank 0's NCCL id reaches the others through
// it), host-memory collectives (the logged scalars, the label count, the stop requests),
// byte gathers of evaluation results, barriers, sub-groups and aborts.
//
// Ordering, as llm.c's multi-GPU trainer does it: each device collective runs on the
// communicator's own stream, after the work queued on the compute stream so far (an event),
// and the compute stream's later work runs after it (another event). The host never waits:
// "blocking" calls return once the collective is queued, and every later op sees its result.
// A request's wait() (isend / irecv) orders the compute stream the same way.
//
// Hangs and faults: a watchdog thread polls the queued collectives; one not finished after
// `timeout_s`, or an asynchronous NCCL error, aborts the communicator and stops the job
// through `control`, naming this rank and the collective (`what`, its kind and size).
#pragma once
#include <memory>
#include <string>

#include "dist/communicator.h"

namespace strata::dist {

// Takes over `control` (the MPI, or single-process, communicator of the same ranks). Every
// rank must call it together, with its GPU current (kernels::use_device). Throws
// strata::Error when NCCL cannot be used: a build without CUDA, no GPU, no libnccl.so.2.
std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> control, double timeout_s);

// Where NCCL can be used by this process: empty, else why not (for messages and test skips).
std::string nccl_unavailable_reason();

}  // namespace strata::dist
