// Hang detection for the MPI communicator (internal to dist/).
//
// Each rank runs one watchdog thread. The thread that calls a collective only marks its start
// and end in the communicator's Tracker (a mutex and a clock read, well under a microsecond):
// nothing is sent per collective. When an operation has been pending past the timeout, the
// watchdog asks every rank of the communicator, over a duplicated "side" communicator, what
// it is doing; every watchdog answers such questions from its own thread, so a rank that is
// sleeping, computing or stuck in another collective still answers, and a rank that answers
// with a lower collective count is one that never entered the pending collective. Questions
// cost nothing until a timeout, unlike announcing every collective to rank 0.
#pragma once
#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace strata::dist::detail {

using Clock = std::chrono::steady_clock;

// One operation as the diagnostics name it, e.g. all_reduce of 1024 floats.
struct Op {
  const char* kind;       // "all_reduce", "send", ... (a string literal)
  const char* unit = "";  // "floats", "bytes per rank", ... (a string literal)
  size_t count = 0;
  int peer = -1;  // communicator rank: the root of a broadcast, the other end of a send / recv
  int tag = 0;
};

// What this rank is doing on one communicator.
class Tracker {
 public:
  // side: a duplicate of the communicator, used only for the watchdog's questions; it is
  // never freed (see Watchdog::retire), MPI_Finalize frees it.
  Tracker(MPI_Comm side, double timeout_s);
  Tracker(const Tracker&) = delete;
  Tracker& operator=(const Tracker&) = delete;

  // Called by the thread running the operation. A collective (`what` non-null) gets the next
  // sequence number; every rank numbers its collectives on a communicator the same way.
  void begin(const Op& op, const char* what);
  void end();
  // An MPI call of the current operation returned `error`: prints it and waits for the
  // watchdog to name the ranks that stopped answering, then stops the job.
  [[noreturn]] void failed(int error);

  int rank() const { return rank_; }
  int world_rank(int comm_rank) const { return world_ranks_[static_cast<size_t>(comm_rank)]; }

 private:
  friend class Watchdog;
  struct State {
    int64_t seq = 0;  // collectives entered so far; the pending one's number while busy
    bool busy = false, collective = false, failed = false;
    bool retired = false;   // the communicator was destroyed
    bool deferred = false;  // a non-root rank left the verdict to a lower rank once
    Op op{""};
    char what[64] = "";
    Clock::time_point start;
  };
  State snapshot();
  void defer();
  std::string describe(const State& s) const;  // "collective #7 'x' (all_reduce, 8 floats)", ...

  MPI_Comm side_;
  int rank_ = 0, size_ = 1;
  bool is_group_ = false;  // a split of MPI_COMM_WORLD: messages give the group's size
  std::vector<int> world_ranks_;  // communicator rank -> MPI_COMM_WORLD rank, for messages
  double timeout_s_, grace_s_;
  std::mutex mutex_;
  State state_;
};

// The process's watchdog thread and the trackers it watches.
class Watchdog {
 public:
  static Watchdog& instance();
  void add(Tracker* t);
  // For a destroyed communicator: the watchdog keeps its tracker, and the side communicator,
  // until exit, to tell ranks still waiting in one of its collectives that this rank is done
  // with it (one tracker and one communicator handle per communicator ever made).
  void retire(std::unique_ptr<Tracker> t);
  // From the exit handler: answers now say the rank is exiting; shutdown() joins the thread
  // (before MPI_Finalize, as it calls MPI).
  void set_exiting();
  void shutdown();

 private:
  struct Reply;
  Watchdog();
  void loop();
  void serve(Tracker& t);
  std::vector<bool> ask(Tracker& t, const std::vector<int>& ranks, std::vector<Reply>& replies);
  void check(Tracker& t);
  void verdict_collective(Tracker& t, const Tracker::State& s);
  void verdict_point_to_point(Tracker& t, const Tracker::State& s);
  void verdict_failure(Tracker& t, const Tracker::State& s);

  std::mutex mutex_;  // guards trackers_ and stop_; held for a whole round of the loop
  std::condition_variable wake_;
  std::vector<Tracker*> trackers_;
  std::vector<std::unique_ptr<Tracker>> retired_;
  bool stop_ = false, exiting_ = false;
  std::thread thread_;
};

}  // namespace strata::dist::detail
