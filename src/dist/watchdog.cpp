#include "dist/watchdog.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>

#include "dist/mpi_runtime.h"
#include "util/error.h"

namespace strata::dist::detail {
namespace {

constexpr int kQueryTag = 1, kReplyTag = 2;
// How often the watchdog looks at its trackers and answers questions; also the latency of
// an answer, so kAnswerWait is many ticks even on an oversubscribed machine.
constexpr auto kTick = std::chrono::milliseconds(100);
constexpr auto kAnswerWait = std::chrono::seconds(2);
// Non-root ranks give rank 0 this long past the timeout to ask around and abort before they
// deliver a verdict themselves (rank 0 may be the rank that is missing). It exceeds
// kAnswerWait so that a root waiting for a dead rank's answer is not overtaken.
constexpr double kMinGraceS = 5.0, kMaxGraceS = 60.0;
// Details for at most this many ranks per list, so a verdict on a large job stays one line.
constexpr size_t kMaxDetails = 4;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

// "floats per rank" -> "float per rank" for a count of 1.
std::string plural(const char* unit, size_t count) {
  std::string u = unit;
  const size_t word_end = std::min(u.find(' '), u.size());
  if (count == 1 && word_end > 0 && u[word_end - 1] == 's') u.erase(word_end - 1, 1);
  return u;
}

}  // namespace

// What one rank says about itself: the number of collectives it has entered on the
// communicator, whether it is inside the last one, and a phrase for the diagnostics.
struct Watchdog::Reply {
  int64_t entered = 0;
  int32_t in_collective = 0;
  char kind[20] = "";  // of the collective it is in, to spot ranks calling different ones
  char what[64] = "";
  char desc[160] = "";
};

Tracker::Tracker(MPI_Comm side, double timeout_s)
    : side_(side), timeout_s_(timeout_s), grace_s_(std::clamp(timeout_s / 10, kMinGraceS, kMaxGraceS)) {
  MPI_Comm_rank(side, &rank_);
  MPI_Comm_size(side, &size_);
  int world_size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  is_group_ = size_ != world_size;
  MPI_Group group, world;
  MPI_Comm_group(side, &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  std::vector<int> mine(static_cast<size_t>(size_));
  std::iota(mine.begin(), mine.end(), 0);
  world_ranks_.resize(mine.size());
  MPI_Group_translate_ranks(group, size_, mine.data(), world, world_ranks_.data());
  MPI_Group_free(&group);
  MPI_Group_free(&world);
}

void Tracker::begin(const Op& op, const char* what) {
  std::lock_guard<std::mutex> lock(mutex_);
  State& s = state_;
  s.busy = true;
  s.collective = what != nullptr;
  s.deferred = false;
  s.op = op;
  if (what) {
    ++s.seq;
    std::snprintf(s.what, sizeof s.what, "%s", what);
  }
  s.start = Clock::now();
}

void Tracker::end() {
  std::lock_guard<std::mutex> lock(mutex_);
  state_.busy = false;
}

Tracker::State Tracker::snapshot() {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_;
}

void Tracker::defer() {
  std::lock_guard<std::mutex> lock(mutex_);
  state_.deferred = true;
}

void Tracker::failed(int error) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(error, text, &len);
  State s;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    state_.failed = true;
    s = state_;
  }
  std::fprintf(stderr, "strata: rank %d: %s failed: %s\n", world_rank(rank_), describe(s).c_str(), text);
  std::fflush(stderr);
  // The watchdog now asks every rank and names those that no longer answer, then aborts;
  // this is the fallback should it be unable to.
  std::this_thread::sleep_for(kAnswerWait + std::chrono::seconds(3));
  abort_job(cat("strata: rank ", world_rank(rank_), ": stopping the job after the MPI error"), 1);
}

std::string Tracker::describe(const State& s) const {
  if (s.busy && s.collective) {
    std::string d = cat("collective #", s.seq, " '", s.what, "' (", s.op.kind);
    if (*s.op.unit) d += cat(", ", s.op.count, " ", plural(s.op.unit, s.op.count));
    // The root: a broadcast comes from it, a reduce goes to it.
    const bool to_root = std::strcmp(s.op.kind, "reduce") == 0;
    if (s.op.peer >= 0) d += cat(to_root ? " to rank " : " from rank ", world_rank(s.op.peer));
    if (is_group_) d += cat("; in a group of ", size_, " ranks");
    return d + ")";
  }
  if (s.busy) {
    const bool send = std::strcmp(s.op.kind, "send") == 0;
    return cat(s.op.kind, " of ", s.op.count, " ", plural("bytes", s.op.count), send ? " to" : " from", " rank ",
               world_rank(s.op.peer), " (tag ", s.op.tag, ")");
  }
  if (s.retired) return cat("done with this communicator (destroyed it after collective #", s.seq, ")");
  if (s.seq == 0) return "before its first collective";
  return cat("between collectives (last: #", s.seq, " '", s.what, "')");
}

Watchdog& Watchdog::instance() {
  // Never destroyed: the exit handler, not static destruction order, decides when the thread
  // stops (it must stop before MPI_Finalize).
  static Watchdog* w = new Watchdog;
  return *w;
}

Watchdog::Watchdog() : thread_([this] { loop(); }) {}

void Watchdog::add(Tracker* t) {
  std::lock_guard<std::mutex> lock(mutex_);
  trackers_.push_back(t);
}

void Watchdog::retire(std::unique_ptr<Tracker> t) {
  {
    std::lock_guard<std::mutex> lock(t->mutex_);
    t->state_.retired = true;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  retired_.push_back(std::move(t));
}

void Watchdog::set_exiting() {
  std::lock_guard<std::mutex> lock(mutex_);
  exiting_ = true;
}

void Watchdog::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, kTick, [this] { return stop_; })) {
    for (Tracker* t : trackers_) serve(*t);
    for (Tracker* t : trackers_) check(*t);
  }
}

// Answers every question waiting on t's side communicator.
void Watchdog::serve(Tracker& t) {
  for (;;) {
    int flag = 0;
    MPI_Message msg;
    MPI_Status status;
    if (MPI_Improbe(MPI_ANY_SOURCE, kQueryTag, t.side_, &flag, &msg, &status) != MPI_SUCCESS || !flag) return;
    int query = 0;
    MPI_Mrecv(&query, 1, MPI_INT, &msg, MPI_STATUS_IGNORE);
    const Tracker::State s = t.snapshot();
    Reply r;
    r.entered = s.seq;
    r.in_collective = s.busy && s.collective;
    std::snprintf(r.kind, sizeof r.kind, "%s", s.op.kind);
    std::snprintf(r.what, sizeof r.what, "%s", s.what);
    const std::string d = exiting_ ? "exiting (its program has ended)" : (s.busy ? "in " : "") + t.describe(s);
    std::snprintf(r.desc, sizeof r.desc, "%s", d.c_str());
    // A few hundred bytes go out eagerly on every transport, so this does not wait for the asker.
    MPI_Send(&r, sizeof r, MPI_BYTE, status.MPI_SOURCE, kReplyTag, t.side_);
  }
}

// Asks `ranks` of t's communicator what they are doing, answering others' questions while it
// waits (two ranks may ask each other at once). Returns who answered, by communicator rank.
std::vector<bool> Watchdog::ask(Tracker& t, const std::vector<int>& ranks, std::vector<Reply>& replies) {
  static const int query = 0;
  replies.assign(static_cast<size_t>(t.size_), Reply{});
  std::vector<bool> answered(replies.size(), false);
  std::vector<MPI_Request> pending(ranks.size(), MPI_REQUEST_NULL);
  for (size_t i = 0; i < ranks.size(); ++i) {
    MPI_Irecv(&replies[static_cast<size_t>(ranks[i])], sizeof(Reply), MPI_BYTE, ranks[i], kReplyTag, t.side_,
              &pending[i]);
    MPI_Request send;
    if (MPI_Isend(&query, 1, MPI_INT, ranks[i], kQueryTag, t.side_, &send) == MPI_SUCCESS) MPI_Request_free(&send);
  }
  const auto deadline = Clock::now() + kAnswerWait;
  size_t left = ranks.size();
  while (left > 0 && Clock::now() < deadline) {
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (pending[i] == MPI_REQUEST_NULL) continue;
      int done = 0;
      const int rc = MPI_Test(&pending[i], &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) pending[i] = MPI_REQUEST_NULL;  // completed in error: no answer
      if (rc == MPI_SUCCESS && done) answered[static_cast<size_t>(ranks[i])] = true;
      if (rc != MPI_SUCCESS || done) --left;
    }
    for (Tracker* other : trackers_) serve(*other);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (MPI_Request& r : pending) {
    if (r == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  return answered;
}

void Watchdog::check(Tracker& t) {
  const Tracker::State s = t.snapshot();
  if (!s.busy) return;
  if (s.failed) return verdict_failure(t, s);
  const double waited = since(s.start);
  if (!s.collective) {
    if (waited >= t.timeout_s_) verdict_point_to_point(t, s);
    return;
  }
  const double due = t.timeout_s_ + (t.rank_ == 0 ? 0 : t.grace_s_) + (s.deferred ? t.grace_s_ : 0);
  if (waited >= due) verdict_collective(t, s);
}

// Rank 0 of the communicator gives the verdict; when rank 0 gives none (it is itself the
// late rank, or cannot ask), the lowest other rank waiting in the collective gives it,
// and every rank gives it after a second grace period, so no rank waits forever.
void Watchdog::verdict_collective(Tracker& t, const Tracker::State& s) {
  std::vector<int> others;
  for (int r = 0; r < t.size_; ++r)
    if (r != t.rank_) others.push_back(r);
  std::vector<Reply> replies;
  const std::vector<bool> answered = ask(t, others, replies);
  std::vector<int> missing, other_op, silent;
  int first_waiting = t.rank_;
  for (int r : others) {
    const Reply& rep = replies[static_cast<size_t>(r)];
    if (!answered[static_cast<size_t>(r)])
      silent.push_back(r);
    else if (rep.entered < s.seq)
      missing.push_back(r);
    else if (rep.entered == s.seq && rep.in_collective &&
             (std::strcmp(rep.kind, s.op.kind) != 0 || std::strcmp(rep.what, s.what) != 0))
      other_op.push_back(r);
    else if (rep.entered == s.seq && rep.in_collective && r != 0)
      first_waiting = std::min(first_waiting, r);
  }
  if (t.rank_ != 0 && !s.deferred && first_waiting != t.rank_) {
    t.defer();
    return;
  }
  const auto ranks = [&](const std::vector<int>& v) {
    std::vector<int> w;
    for (int r : v) w.push_back(t.world_rank(r));
    return join(w);
  };
  const auto details = [&](const std::vector<int>& v) {
    std::string d;
    for (size_t i = 0; i < std::min(v.size(), kMaxDetails); ++i)
      d += cat(i ? "; " : "", "rank ", t.world_rank(v[i]), " is ", replies[static_cast<size_t>(v[i])].desc);
    return d;
  };
  std::string line = cat("strata: ", t.describe(s), " did not complete within ", t.timeout_s_, " s; ");
  if (!missing.empty())
    line += cat("ranks that never entered it: ", ranks(missing), " (", details(missing), ")");
  else
    line += "every rank that answered entered it";
  if (!other_op.empty()) line += cat("; ranks in a different collective #", s.seq, ": ", details(other_op));
  if (!silent.empty()) line += cat("; ranks not answering: ", ranks(silent), " (dead, or stuck outside MPI)");
  if (t.rank_ != 0) line += cat("; verdict of rank ", t.world_rank(t.rank_), " as rank 0 gave none");
  abort_job(line, 1);
}

void Watchdog::verdict_point_to_point(Tracker& t, const Tracker::State& s) {
  std::vector<Reply> replies;
  const int peer = s.op.peer;
  const bool answered = ask(t, {peer}, replies)[static_cast<size_t>(peer)];
  abort_job(cat("strata: rank ", t.world_rank(t.rank_), ": ", t.describe(s), " did not complete within ", t.timeout_s_,
                " s; rank ", t.world_rank(peer), answered ? " is " : " does not answer (dead, or stuck outside MPI)",
                answered ? replies[static_cast<size_t>(peer)].desc : ""),
            1);
}

void Watchdog::verdict_failure(Tracker& t, const Tracker::State& s) {
  std::vector<int> others;
  for (int r = 0; r < t.size_; ++r)
    if (r != t.rank_) others.push_back(r);
  std::vector<Reply> replies;
  const std::vector<bool> answered = ask(t, others, replies);
  std::vector<int> lost;
  for (int r : others)
    if (!answered[static_cast<size_t>(r)]) lost.push_back(t.world_rank(r));
  const std::string who = t.describe(s);
  abort_job(lost.empty() ? cat("strata: rank ", t.world_rank(t.rank_), ": every rank still answers after ", who,
                               " failed; stopping the job")
                         : cat("strata: rank ", t.world_rank(t.rank_), ": lost contact with rank",
                               lost.size() > 1 ? "s " : " ", join(lost), " during ", who),
            1);
}

}  // namespace strata::dist::detail
