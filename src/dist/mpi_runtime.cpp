#include "dist/mpi_runtime.h"

#include <mpi.h>
#include <stdlib.h>  // on_exit (glibc)
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <mutex>
#include <thread>

#include "dist/watchdog.h"
#include "util/error.h"

namespace strata::dist::detail {
namespace {

int g_world_rank = 0;
size_t g_max_count = INT_MAX;
MPI_Comm g_exit_comm = MPI_COMM_NULL;  // for the barrier of a clean exit
pid_t g_pid = 0;                       // a forked child inherits the exit handler, not MPI
int g_agreed_status = 0;               // set_agreed_exit_status: a non-zero status that finalises

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    default: return "MPI_THREAD_MULTIPLE";
  }
}

// Registered with on_exit (glibc) rather than atexit because it receives the exit status.
// MPI_Finalize waits for every rank, so a rank that finalised on its way out of an error
// would wait for ranks that are themselves waiting for it in a collective: on a non-zero
// status the job is aborted instead, at once. On a clean exit the rank first waits for the
// others in a non-blocking barrier while its watchdog still answers ("exiting"), so a rank
// that leaves early is reported as such by the others' timeout instead of as silent.
void at_exit(int status, void*) {
  if (getpid() != g_pid) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (status != 0 && status != g_agreed_status)
    abort_job(cat("strata: rank ", g_world_rank, ": exiting with status ", status, "; stopping every rank of the job"),
              status);
  Watchdog::instance().set_exiting();
  MPI_Request barrier;
  MPI_Ibarrier(g_exit_comm, &barrier);
  for (int done = 0; MPI_Test(&barrier, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done;)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  Watchdog::instance().shutdown();
  MPI_Comm_free(&g_exit_comm);
  MPI_Finalize();
}

void read_max_count() {
  const char* v = std::getenv("STRATA_DIST_MAX_COUNT");
  if (!v) return;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v, &end, 10);
  if (end == v || *end != '\0' || errno != 0 || n < 1 || n > INT_MAX)
    fail("environment variable STRATA_DIST_MAX_COUNT='", v, "' is not an integer between 1 and ", INT_MAX);
  g_max_count = static_cast<size_t>(n);
}

}  // namespace

void init_mpi() {
  static std::once_flag once;
  std::call_once(once, [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized)
      fail("MPI was initialised before strata's MPI communicator was made: strata initialises MPI itself "
           "(with MPI_THREAD_MULTIPLE) and finalises it at exit");
    read_max_count();
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
      MPI_Finalize();
      fail("the MPI library provides only ", thread_level_name(provided),
           "; strata needs MPI_THREAD_MULTIPLE (its watchdog thread calls MPI while a collective runs): "
           "use an MPI built with thread support, such as Open MPI 3 or later");
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &g_world_rank);
    MPI_Comm_dup(MPI_COMM_WORLD, &g_exit_comm);
    g_pid = getpid();
    on_exit(at_exit, nullptr);
  });
}

size_t max_count() { return g_max_count; }

void abort_job(const std::string& line, int code) {
  // The watchdog and the calling thread can both decide to stop the job; one line is enough.
  static std::atomic<bool> aborting{false};
  if (!aborting.exchange(true)) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort does not return in Open MPI; the standard does not promise it
  }
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // the first caller is stopping the job
}

}  // namespace strata::dist::detail

namespace strata::dist {

void set_agreed_exit_status(int status) { detail::g_agreed_status = status; }

}  // namespace strata::dist
