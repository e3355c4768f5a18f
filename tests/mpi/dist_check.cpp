// Multi-process checks of the MPI communicator, run under mpirun by CTest (tests/CMakeLists.txt).
//
//   strata_dist_check collectives     every collective against exact expected values (any even size)
//   strata_dist_check timeout         rank 2 arrives late at a collective: rank 0's verdict names it
//   strata_dist_check timeout-root    rank 0 is the late one: rank 1 gives the verdict
//   strata_dist_check timeout-recv    rank 0 waits in recv for a rank that never sends
//   strata_dist_check timeout-irecv   the same through irecv + wait (a pipeline stage's wait)
//   strata_dist_check early-exit      rank 1 returns from main while the others enter a collective
//   strata_dist_check die             rank 1 calls exit(1) before a collective
//   strata_dist_check die-kill        rank 1 kills itself with SIGKILL before a collective
//   strata_dist_check truncate        rank 1 receives into a buffer too small: an MPI error
//   strata_dist_check mismatch        rank 1 has a different configuration fingerprint
//
// `collectives` exits 0 when everything matches. The failure cases are meant to end the job
// with a non-zero status; tests/mpi/expect_failure.sh checks the status, the time it took
// and the diagnostics. The collective timeout is 3 s in every case.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "dist/communicator.h"
#include "dist/process_groups.h"
#include "util/error.h"

namespace {

using strata::dist::Communicator;

constexpr double kTimeoutS = 3.0;

int g_failures = 0;

void expect(bool ok, const std::string& what, int rank) {
  if (ok) return;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
  ++g_failures;
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

// Integers stored as floats stay exact through the sums below (all well under 2^24).
void check_all_reduce(Communicator& c) {
  const int r = c.rank(), n = c.size();
  std::vector<float> f(1000);
  std::vector<double> d(1000);
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(r * 1000 + static_cast<int>(i));
  for (size_t i = 0; i < d.size(); ++i) d[i] = r * 0.5 + static_cast<double>(i);
  c.all_reduce_sum(f.data(), f.size(), "all_reduce float");
  c.all_reduce_sum(d.data(), d.size(), "all_reduce double");
  bool ok_f = true, ok_d = true;
  for (size_t i = 0; i < f.size(); ++i) {
    ok_f &= f[i] == static_cast<float>(1000 * n * (n - 1) / 2 + n * static_cast<int>(i));
    ok_d &= d[i] == 0.5 * n * (n - 1) / 2 + n * static_cast<double>(i);
  }
  expect(ok_f, "all_reduce_sum(float)", r);
  expect(ok_d, "all_reduce_sum(double)", r);
}

void check_reduce_scatter(Communicator& c) {
  const int r = c.rank(), n = c.size();
  const size_t per = 37;
  std::vector<float> in(per * static_cast<size_t>(n)), out(per, -1.0f);
  for (size_t j = 0; j < in.size(); ++j) in[j] = static_cast<float>(r + static_cast<int>(j));
  c.reduce_scatter_sum(in.data(), out.data(), per, "reduce_scatter");
  bool ok = true;
  for (size_t i = 0; i < per; ++i)
    ok &= out[i] == static_cast<float>(n * (r * static_cast<int>(per) + static_cast<int>(i)) + n * (n - 1) / 2);
  expect(ok, "reduce_scatter_sum", r);
}

void check_all_gather(Communicator& c) {
  const int r = c.rank(), n = c.size();
  const size_t per = 25;
  std::vector<float> in(per), out(per * static_cast<size_t>(n), -1.0f);
  for (size_t i = 0; i < per; ++i) in[i] = static_cast<float>(r * 100 + static_cast<int>(i));
  c.all_gather(in.data(), out.data(), per, "all_gather");
  std::vector<float> expected(out.size());
  for (int q = 0; q < n; ++q)
    for (size_t i = 0; i < per; ++i)
      expected[static_cast<size_t>(q) * per + i] = static_cast<float>(q * 100 + static_cast<int>(i));
  expect(out == expected, "all_gather", r);
  // In place: this rank's block already sits in the output.
  std::vector<float> inplace(out.size(), -1.0f);
  std::copy(in.begin(), in.end(), inplace.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(r) * per));
  c.all_gather(inplace.data() + static_cast<size_t>(r) * per, inplace.data(), per, "all_gather in place");
  expect(inplace == expected, "all_gather in place", r);
}

// Rank q's data holds q + i; the root (the last rank) gets the sum, the others keep theirs.
void check_reduce(Communicator& c) {
  const int r = c.rank(), n = c.size(), root = n - 1;
  std::vector<float> data(41);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(r + static_cast<int>(i));
  c.reduce_sum(data.data(), data.size(), root, "reduce to the last rank");
  bool ok = true;
  for (size_t i = 0; i < data.size(); ++i)
    ok &= data[i] == static_cast<float>(r == root ? n * (n - 1) / 2 + n * static_cast<int>(i) : r + static_cast<int>(i));
  expect(ok, "reduce_sum (root: the sum; others: unchanged)", r);
}

// Rank q > 0 contributes 3q + 5 values, rank 0 none (more than STRATA_DIST_MAX_COUNT=7 in all at 2
// ranks, so the chunked path runs too).
void check_all_gather_v(Communicator& c) {
  const int r = c.rank(), n = c.size();
  std::vector<size_t> counts(static_cast<size_t>(n));
  for (int q = 0; q < n; ++q) counts[static_cast<size_t>(q)] = q == 0 ? 0 : static_cast<size_t>(3 * q + 5);
  std::vector<float> data(std::accumulate(counts.begin(), counts.end(), size_t{0}), -1.0f), expected(data.size());
  size_t off = 0;
  for (int q = 0; q < n; ++q)
    for (size_t i = 0; i < counts[static_cast<size_t>(q)]; ++i, ++off) {
      expected[off] = static_cast<float>(q * 100 + static_cast<int>(i));
      if (q == r) data[off] = expected[off];
    }
  c.all_gather_v(data.data(), counts, "all_gather_v");
  expect(data == expected, "all_gather_v (blocks of unequal size, one empty)", r);
}

void check_all_gather_bytes(Communicator& c) {
  const int r = c.rank(), n = c.size();
  // Rank 0 sends nothing; rank q sends 11q copies of 'a' + q, with a NUL inside.
  const auto block = [](int q) {
    std::string s(static_cast<size_t>(11 * q), static_cast<char>('a' + q));
    if (!s.empty()) s[s.size() / 2] = '\0';
    return s;
  };
  const std::vector<std::string> all = c.all_gather_bytes(block(r), "all_gather_bytes");
  bool ok = all.size() == static_cast<size_t>(n);
  for (int q = 0; ok && q < n; ++q) ok = all[static_cast<size_t>(q)] == block(q);
  expect(ok, "all_gather_bytes", r);
}

void check_broadcast(Communicator& c) {
  const int r = c.rank(), root = c.size() - 1;
  std::vector<unsigned char> buf(1000, 0);
  if (r == root)
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(i * 7);
  c.broadcast(buf.data(), buf.size(), root, "broadcast");
  bool ok = true;
  for (size_t i = 0; i < buf.size(); ++i) ok &= buf[i] == static_cast<unsigned char>(i * 7);
  expect(ok, "broadcast from the last rank", r);
}

// A ring: even ranks send first, odd ranks receive first, so blocking sends of messages too
// large to go out eagerly (256 KiB) cannot deadlock with an even number of ranks.
void check_ring(Communicator& c) {
  const int r = c.rank(), n = c.size();
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  std::vector<int> mine(1 << 16), got(mine.size(), -1);
  std::iota(mine.begin(), mine.end(), r * 1'000'000);
  const size_t bytes = mine.size() * sizeof(int);
  if (r % 2 == 0) {
    c.send(mine.data(), bytes, next, 5);
    c.recv(got.data(), bytes, prev, 5);
  } else {
    c.recv(got.data(), bytes, prev, 5);
    c.send(mine.data(), bytes, next, 5);
  }
  bool ok = true;
  for (size_t i = 0; i < got.size(); ++i) ok &= got[i] == prev * 1'000'000 + static_cast<int>(i);
  expect(ok, "send / recv ring", r);
}

// Non-blocking messages in both directions of a ring at once, posted receives first in the
// opposite order of the sends (tags match them), one large enough (64 KiB) not to go out
// eagerly: every rank posts everything, then waits, so nothing may block in the posting.
void check_nonblocking_ring(Communicator& c) {
  const int r = c.rank(), n = c.size();
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  std::vector<int> big(1 << 14), small(25), got_big(big.size(), -1), got_small(small.size(), -1);
  std::iota(big.begin(), big.end(), r * 1'000'000);
  std::iota(small.begin(), small.end(), r * 1'000);
  auto recv_small = c.irecv(got_small.data(), small.size() * sizeof(int), next, 12);
  auto recv_big = c.irecv(got_big.data(), big.size() * sizeof(int), prev, 11);
  auto send_big = c.isend(big.data(), big.size() * sizeof(int), next, 11);
  auto send_small = c.isend(small.data(), small.size() * sizeof(int), prev, 12);
  recv_big->wait();
  while (!recv_small->test()) {
  }
  send_big->wait();
  send_small->wait();
  bool ok = recv_small->test();
  for (size_t i = 0; i < got_big.size(); ++i) ok &= got_big[i] == prev * 1'000'000 + static_cast<int>(i);
  for (size_t i = 0; i < got_small.size(); ++i) ok &= got_small[i] == next * 1'000 + static_cast<int>(i);
  expect(ok, "isend / irecv both ways round a ring", r);
}

void check_split(Communicator& c) {
  const int r = c.rank(), n = c.size();
  auto group = c.split(r % 2, r);
  const int expected_size = r % 2 == 0 ? (n + 1) / 2 : n / 2;
  expect(group->size() == expected_size && group->rank() == r / 2, "split: group size and rank", r);
  float sum = static_cast<float>(r);
  group->all_reduce_sum(&sum, 1, "sum of world ranks in the group");
  float expected = 0;
  for (int q = r % 2; q < n; q += 2) expected += static_cast<float>(q);
  expect(sum == expected, "split: all_reduce within the even / odd group", r);
  group->barrier("group barrier");
}

// One communicator per axis of a rank grid: each holds exactly the ranks the grid says, with
// the coordinate along its axis as its rank.
void check_process_groups(Communicator& c, int pp, int tp, const char* placement) {
  using strata::dist::Axis;
  const strata::dist::RankGrid grid(c.size(), pp, tp, placement);
  const strata::dist::ProcessGroups groups = strata::dist::make_process_groups(c, grid);
  const int r = c.rank();
  for (Axis a : {Axis::Data, Axis::Pipeline, Axis::Tensor}) {
    Communicator& g = groups.along(a);
    const std::vector<int> members = grid.group(a, r);
    float sum = static_cast<float>(r);
    g.all_reduce_sum(&sum, 1, "sum of world ranks along an axis");
    const std::string what = std::string(placement) + " " + strata::dist::axis_name(a) + " group";
    expect(g.size() == grid.size(a) && g.rank() == grid.coord(r)[a], what + ": size and rank", r);
    expect(sum == static_cast<float>(std::accumulate(members.begin(), members.end(), 0)), what + ": members", r);
  }
}

int collectives() {
  const strata::dist::Layout layout = strata::dist::detect_layout();
  auto c = strata::dist::make_mpi_communicator(kTimeoutS);
  const int r = c->rank();
  expect(layout.source == "OpenMPI" && layout.rank == r && layout.world_size == c->size(),
         "detect_layout agrees with MPI: " + layout.describe(), r);
  check_all_reduce(*c);
  check_reduce_scatter(*c);
  check_all_gather(*c);
  check_reduce(*c);
  check_all_gather_v(*c);
  check_all_gather_bytes(*c);
  check_broadcast(*c);
  check_ring(*c);
  check_nonblocking_ring(*c);
  check_split(*c);
  check_process_groups(*c, 2, 1, "spread");
  if (c->size() % 4 == 0) check_process_groups(*c, 2, 2, "PTD");
  strata::dist::check_same_on_all_ranks(*c, "same fingerprint", "configuration");
  if (r == 0) sleep_s(0.2);  // the others wait (asleep) in the quiet barrier
  c->quiet_barrier("quiet barrier");
  c->barrier("end");
  if (g_failures) return 1;
  const char* max_count = std::getenv("STRATA_DIST_MAX_COUNT");
  if (r == 0)
    std::printf("collectives OK on %d ranks (largest MPI count %s): all_reduce float/double, reduce_scatter, "
                "all_gather (+ in place), reduce to a root, all_gather_v, all_gather_bytes, broadcast, send/recv "
                "ring, isend/irecv ring, split even/odd, rank-grid groups, check_same_on_all_ranks, quiet barrier, barrier\n",
                c->size(), max_count ? max_count : "INT_MAX");
  return 0;
}

// Everyone completes collective #1, then `late` sleeps while the others enter #2.
int timeout(int late) {
  auto c = strata::dist::make_mpi_communicator(kTimeoutS);
  float x = 1;
  c->all_reduce_sum(&x, 1, "warm-up");
  if (c->rank() == late) sleep_s(60);
  std::vector<float> grads(1024, 1.0f);
  c->all_reduce_sum(grads.data(), grads.size(), "gradient bucket 3");
  return 0;
}

int timeout_recv() {
  auto c = strata::dist::make_mpi_communicator(kTimeoutS);
  c->barrier("warm-up");
  char buf[64];
  if (c->rank() == 0) c->recv(buf, sizeof buf, 1, 7);
  if (c->rank() == 1) sleep_s(60);
  return 0;
}

int timeout_irecv() {
  auto c = strata::dist::make_mpi_communicator(kTimeoutS);
  c->barrier("warm-up");
  char buf[64];
  if (c->rank() == 0) c->irecv(buf, sizeof buf, 1, 7)->wait();
  if (c->rank() == 1) sleep_s(60);
  return 0;
}

int early_exit() {
  auto c = strata::dist::make_mpi_communicator(kTimeoutS);
  c->barrier("warm-up");
  if (c->rank() == 1) return 0;
  c->barrier("final barrier");
  return 0;
}

int die(bool kill) {
  auto c = strata::dist::make_mpi_communicator(kTimeoutS);
  c->barrier("warm-up");
  if (c->rank() == 1) {
    std::fprintf(stderr, "rank 1: %s before the next collective\n", kill ? "raising SIGKILL" : "calling exit(1)");
    if (kill) raise(SIGKILL);
    std::exit(1);
  }
  float x = 1;
  c->all_reduce_sum(&x, 1, "loss");
  return 0;
}

int truncated_recv() {
  auto c = strata::dist::make_mpi_communicator(kTimeoutS);
  char big[100] = {}, small[10];
  if (c->rank() == 0) c->send(big, sizeof big, 1, 3);
  if (c->rank() == 1) c->recv(small, sizeof small, 0, 3);
  c->barrier("after the message");
  return 0;
}

// Every rank reaches the same verdict; each reports it, they agree to stop (barrier), and
// return 1 (the exit handler then ends the job).
int mismatch() {
  auto c = strata::dist::make_mpi_communicator(kTimeoutS);
  try {
    strata::dist::check_same_on_all_ranks(*c, c->rank() == 1 ? "hash B" : "hash A", "configuration");
  } catch (const strata::Error& e) {
    std::fprintf(stderr, "rank %d: error: %s\n", c->rank(), e.what());
    c->barrier("every rank reported the mismatch");
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  try {
    if (cmd == "collectives") return collectives();
    if (cmd == "timeout") return timeout(2);
    if (cmd == "timeout-root") return timeout(0);
    if (cmd == "timeout-recv") return timeout_recv();
    if (cmd == "timeout-irecv") return timeout_irecv();
    if (cmd == "early-exit") return early_exit();
    if (cmd == "die") return die(false);
    if (cmd == "die-kill") return die(true);
    if (cmd == "truncate") return truncated_recv();
    if (cmd == "mismatch") return mismatch();
  } catch (const strata::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: strata_dist_check collectives|timeout|timeout-root|timeout-recv|timeout-irecv|early-exit|die|die-kill|"
                       "truncate|mismatch\n");
  return 2;
}
