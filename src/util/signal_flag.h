// Signals turned into a flag a loop polls, instead of their default action (termination).
// The Trainer stops after its step with a checkpoint on SIGTERM (what Slurm, a spot reclaim
// or `kill` sends) and SIGUSR1 (what mpirun forwards to every rank: it turns its own SIGTERM
// into a kill without grace); the job runner turns Ctrl-C into a graceful stop.
#pragma once
#include <csignal>
#include <initializer_list>

namespace strata {

// While alive, each of `signals` increments the count instead of terminating the process.
// One SignalFlag at a time per process. Once one has counted a signal, its signals keep being
// absorbed after it ends (a stop is under way: more requests change nothing); otherwise they
// act as by default again.
class SignalFlag {
 public:
  explicit SignalFlag(std::initializer_list<int> signals);
  ~SignalFlag();
  SignalFlag(const SignalFlag&) = delete;
  SignalFlag& operator=(const SignalFlag&) = delete;

  int count() const;         // signals received since construction
  int first_signal() const;  // the first one's number, 0 if none
};

// Keeps SIGTERM, SIGUSR1 and SIGINT off the threads that compute: they are blocked in the
// calling thread (and so in every thread it starts later: OpenMP, MPI, data loaders) and
// taken by one idle thread started here. Call it before the process starts threads of its
// own. Why: a handler that ran on a thread inside oneDNN's JIT-compiled GEMM was seen to
// corrupt the heap here (glibc "corrupted size vs. prev_size" in dnnl_sgemm, a few runs in
// ten under load, in this gVisor sandbox); on the idle thread it never did (docs/jobs.md).
// Without a SignalFlag alive the signals still terminate the process as by default.
void deliver_signals_to_an_idle_thread();

// The same routing for a scope, leaving the handlers as they are: while alive, SIGTERM,
// SIGUSR1 and SIGINT are blocked in this thread (and so in the threads it starts meanwhile,
// which keep them blocked), and the idle thread takes them. For the Python module: Python's
// own SIGINT handler then runs on the idle thread and only sets the flag Python polls, and
// no system call of the computing threads is interrupted (Python installs its handler
// without SA_RESTART: a read or write in the data loader would fail with EINTR).
class SignalsOffThisThread {
 public:
  SignalsOffThisThread();
  ~SignalsOffThisThread();
  SignalsOffThisThread(const SignalsOffThisThread&) = delete;
  SignalsOffThisThread& operator=(const SignalsOffThisThread&) = delete;

 private:
  sigset_t previous_;
};

}  // namespace strata
