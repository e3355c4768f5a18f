// MPI start-up and shut-down for the MPI communicator (internal to dist/).
#pragma once
#include <cstddef>
#include <string>

namespace strata::dist::detail {

// Initialises MPI once with MPI_THREAD_MULTIPLE (the watchdog thread calls MPI while a
// collective runs on the caller's thread) and installs the exit handler: a clean exit
// (status 0) waits for the other ranks and calls MPI_Finalize; any other status stops the
// whole job with MPI_Abort at once, so no rank waits for one that has given up.
void init_mpi();

// Largest element count passed to one MPI call: INT_MAX, or STRATA_DIST_MAX_COUNT from the
// environment, which the tests set small to run the chunked paths on small buffers.
size_t max_count();

// Prints `line` (one line, no newline) to stderr and stops every rank with exit code `code`.
[[noreturn]] void abort_job(const std::string& line, int code);

}  // namespace strata::dist::detail
