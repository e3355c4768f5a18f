// Signals turned into a flag a loop polls, instead of their default action (termination).
// The Trainer stops after its step with a checkpoint on SIGTERM (what Slurm, a spot reclaim
// or `kill` sends) and SIGUSR1 (what mpirun forwards to every rank: it turns its own SIGTERM
// into a kill without grace); the job runner turns Ctrl-C into a graceful stop.
#pragma once
#include <initializer_list>
#include <vector>

namespace strata {

// While alive, each of `signals` increments the count instead of its default action. One
// SignalFlag at a time per process (the state is the process's). The destructor restores
// the default actions: outside the scope the signals act at once again.
class SignalFlag {
 public:
  explicit SignalFlag(std::initializer_list<int> signals);
  ~SignalFlag();
  SignalFlag(const SignalFlag&) = delete;
  SignalFlag& operator=(const SignalFlag&) = delete;

  int count() const;        // signals received since construction
  int first_signal() const;  // the first one's number, 0 if none

 private:
  std::vector<int> signals_;
};

}  // namespace strata
