// The MPI communicator: each Communicator owns a duplicate of MPI_COMM_WORLD (or of a split
// of it), so strata's messages never match another library's, plus a second duplicate for
// the watchdog's questions (watchdog.h). MPI calls return errors (MPI_ERRORS_RETURN) so a
// failure is reported with the collective's name before the job stops.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <thread>

#include "dist/communicator.h"
#include "dist/mpi_runtime.h"
#include "dist/watchdog.h"
#include "util/error.h"

namespace strata::dist {
namespace {

using detail::Op;
using detail::Tracker;

// Marks one operation in the tracker, also when it ends in an exception.
class Scope {
 public:
  Scope(Tracker& t, const Op& op, const char* what) : t_(t) { t_.begin(op, what); }
  ~Scope() { t_.end(); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Tracker& t_;
};

// Waits until `done()` (which polls MPI) is true. Polls rather than blocking in MPI: a rank
// waiting out a pipeline bubble would otherwise spin a core that another rank on the host
// computes with. After a short spin it sleeps between polls, 20 us at first and twice as long
// each time up to 0.5 ms: a long wait then costs a few thousand wake-ups a second, and a
// message that arrives during one is seen at most 0.5 ms late (small against a stage's compute).
template <typename Done>
void poll_until(Done done) {
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
  auto nap = std::chrono::microseconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() < spin_until) continue;
    std::this_thread::sleep_for(nap);
    nap = std::min(2 * nap, std::chrono::microseconds(500));
  }
}

// One isend / irecv: its MPI requests (one per chunk of max_count() bytes) and what the
// watchdog calls it while the caller waits.
class MpiRequest final : public Request {
 public:
  MpiRequest(Tracker& tracker, const Op& op, std::vector<MPI_Request> reqs, std::vector<int> chunk_bytes)
      : tracker_(tracker), op_(op), reqs_(std::move(reqs)), chunk_bytes_(std::move(chunk_bytes)) {}
  ~MpiRequest() override {
    if (!done_) MPI_Waitall(static_cast<int>(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE);
  }

  bool test() override {
    if (done_) return true;
    Scope scope(tracker_, op_, nullptr);
    return poll();
  }

  void wait() override {
    if (done_) return;
    Scope scope(tracker_, op_, nullptr);
    poll_until([this] { return poll(); });
  }

 private:
  bool poll() {
    int flag = 0;
    std::vector<MPI_Status> st(reqs_.size());
    const int rc = MPI_Testall(static_cast<int>(reqs_.size()), reqs_.data(), &flag, st.data());
    if (rc != MPI_SUCCESS) tracker_.failed(rc);
    if (!flag) return false;
    done_ = true;
    if (std::strcmp(op_.kind, "recv") == 0)
      for (size_t i = 0; i < st.size(); ++i) {
        int got = 0;
        MPI_Get_count(&st[i], MPI_BYTE, &got);
        STRATA_CHECK(got == chunk_bytes_[i], "recv from rank ", tracker_.world_rank(op_.peer), " (tag ", op_.tag,
                     ") expected ", op_.count, " bytes, but the sender sent fewer");
      }
    return true;
  }

  Tracker& tracker_;
  Op op_;
  std::vector<MPI_Request> reqs_;
  std::vector<int> chunk_bytes_;
  bool done_ = false;
};

class MpiCommunicator final : public Communicator {
 public:
  // Takes ownership of comm.
  MpiCommunicator(MPI_Comm comm, double timeout_s) : comm_(comm), timeout_s_(timeout_s), max_(detail::max_count()) {
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm side = MPI_COMM_NULL;
    MPI_Comm_dup(comm_, &side);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    int* tag_ub = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &found);
    tag_ub_ = found ? *tag_ub : 32767;  // the least the standard allows
    tracker_ = std::make_unique<Tracker>(side, timeout_s);
    detail::Watchdog::instance().add(tracker_.get());
  }

  ~MpiCommunicator() override {
    detail::Watchdog::instance().retire(std::move(tracker_));
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);  // after the exit handler, MPI_Finalize has freed it
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_reduce_sum(float* data, size_t n, const char* what) override {
    all_reduce(data, n, MPI_FLOAT, "floats", what);
  }
  void all_reduce_sum(double* data, size_t n, const char* what) override {
    all_reduce(data, n, MPI_DOUBLE, "doubles", what);
  }
  void all_reduce_max(float* data, size_t n, const char* what) override {
    all_reduce(data, n, MPI_FLOAT, "floats", what, MPI_MAX);
  }

  void reduce_scatter_sum(const float* in, float* out, size_t n, const char* what) override {
    Scope scope(*tracker_, {"reduce_scatter", "floats per rank", n}, what);
    if (n <= max_) return call(MPI_Reduce_scatter_block(in, out, static_cast<int>(n), MPI_FLOAT, MPI_SUM, comm_));
    // Rank r's slice lies at in + r * n on every rank; chunk by chunk it is reduced to r.
    for (int r = 0; r < size_; ++r)
      for (size_t off = 0; off < n; off += max_)
        call(MPI_Reduce(in + static_cast<size_t>(r) * n + off, r == rank_ ? out + off : nullptr, count(n - off),
                        MPI_FLOAT, MPI_SUM, r, comm_));
  }

  void all_gather(const float* in, float* out, size_t n, const char* what) override {
    Scope scope(*tracker_, {"all_gather", "floats per rank", n}, what);
    float* mine = out + static_cast<size_t>(rank_) * n;
    if (n <= max_)
      return call(MPI_Allgather(in == mine ? MPI_IN_PLACE : in, static_cast<int>(n), MPI_FLOAT, out,
                                static_cast<int>(n), MPI_FLOAT, comm_));
    if (in != mine) std::memcpy(mine, in, n * sizeof(float));
    for (int r = 0; r < size_; ++r) bcast(out + static_cast<size_t>(r) * n, n, MPI_FLOAT, r);
  }

  void reduce_sum(float* data, size_t n, int root, const char* what) override {
    check_peer(root, "reduce root");
    Scope scope(*tracker_, {"reduce", "floats", n, root}, what);
    const bool mine = rank_ == root;
    for (size_t off = 0; off < n; off += max_)
      call(MPI_Reduce(mine ? MPI_IN_PLACE : data + off, mine ? data + off : nullptr, count(n - off), MPI_FLOAT,
                      MPI_SUM, root, comm_));
  }

  void all_gather_v(float* data, const std::vector<size_t>& counts, const char* what) override {
    STRATA_CHECK(counts.size() == static_cast<size_t>(size_), "all_gather_v '", what, "': ", counts.size(),
                 " counts for ", size_, " ranks");
    std::vector<size_t> displs(counts.size() + 1, 0);
    std::partial_sum(counts.begin(), counts.end(), displs.begin() + 1);
    Scope scope(*tracker_, {"all_gather_v", "floats in all", displs.back()}, what);
    // MPI's counts and displacements are int: past that, one broadcast per rank and chunk.
    if (displs.back() <= max_) {
      std::vector<int> c(counts.begin(), counts.end()), d(displs.begin(), displs.end() - 1);
      return call(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, c.data(), d.data(), MPI_FLOAT, comm_));
    }
    for (int r = 0; r < size_; ++r)
      bcast(data + displs[static_cast<size_t>(r)], counts[static_cast<size_t>(r)], MPI_FLOAT, r);
  }

  std::vector<std::string> all_gather_bytes(const std::string& mine, const char* what) override {
    Scope scope(*tracker_, {"all_gather_bytes", "bytes from this rank", mine.size()}, what);
    const uint64_t my_size = mine.size();
    std::vector<uint64_t> sizes(static_cast<size_t>(size_));
    call(MPI_Allgather(&my_size, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, comm_));
    std::vector<size_t> offsets(sizes.size() + 1, 0);
    std::partial_sum(sizes.begin(), sizes.end(), offsets.begin() + 1);
    std::string all(offsets.back(), '\0');
    if (offsets.back() <= max_) {
      std::vector<int> counts(sizes.begin(), sizes.end()), displs(offsets.begin(), offsets.end() - 1);
      call(MPI_Allgatherv(mine.data(), static_cast<int>(my_size), MPI_BYTE, all.data(), counts.data(), displs.data(),
                          MPI_BYTE, comm_));
    } else {
      all.replace(offsets[static_cast<size_t>(rank_)], mine.size(), mine);
      for (int r = 0; r < size_; ++r)
        bcast(all.data() + offsets[static_cast<size_t>(r)], sizes[static_cast<size_t>(r)], MPI_BYTE, r);
    }
    std::vector<std::string> out;
    for (size_t r = 0; r < sizes.size(); ++r) out.push_back(all.substr(offsets[r], sizes[r]));
    return out;
  }

  void broadcast(void* data, size_t bytes, int root, const char* what) override {
    check_peer(root, "broadcast root");
    Scope scope(*tracker_, {"broadcast", "bytes", bytes, root}, what);
    bcast(static_cast<char*>(data), bytes, MPI_BYTE, root);
  }

  void send(const void* data, size_t bytes, int peer, int tag) override {
    check_peer(peer, "send to rank");
    check_tag(tag);
    Scope scope(*tracker_, {"send", "bytes", bytes, peer, tag}, nullptr);
    const char* p = static_cast<const char*>(data);
    for (size_t off = 0; off < bytes; off += max_)
      call(MPI_Send(p + off, count(bytes - off), MPI_BYTE, peer, tag, comm_));
  }

  void recv(void* data, size_t bytes, int peer, int tag) override {
    check_peer(peer, "recv from rank");
    check_tag(tag);
    Scope scope(*tracker_, {"recv", "bytes", bytes, peer, tag}, nullptr);
    char* p = static_cast<char*>(data);
    for (size_t off = 0; off < bytes; off += max_) {
      MPI_Status status;
      call(MPI_Recv(p + off, count(bytes - off), MPI_BYTE, peer, tag, comm_, &status));
      int got = 0;
      MPI_Get_count(&status, MPI_BYTE, &got);
      STRATA_CHECK(got == count(bytes - off), "recv from rank ", peer, " (tag ", tag, ") expected ", bytes,
                   " bytes, but the sender sent fewer");
    }
  }

  std::unique_ptr<Request> isend(const void* data, size_t bytes, int peer, int tag) override {
    return start(const_cast<void*>(data), bytes, peer, tag, "send");
  }
  std::unique_ptr<Request> irecv(void* data, size_t bytes, int peer, int tag) override {
    return start(data, bytes, peer, tag, "recv");
  }

  void barrier(const char* what) override {
    Scope scope(*tracker_, {"barrier"}, what);
    call(MPI_Barrier(comm_));
  }

  void quiet_barrier(const char* what) override {
    Scope scope(*tracker_, {"barrier"}, what);
    MPI_Request r = MPI_REQUEST_NULL;
    call(MPI_Ibarrier(comm_, &r));
    poll_until([&] {
      int flag = 0;
      call(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
      return flag != 0;
    });
  }

  std::unique_ptr<Communicator> split(int color, int key) override {
    STRATA_CHECK(color >= 0, "split: the color must be >= 0, got ", color);
    MPI_Comm sub = MPI_COMM_NULL;
    {
      Scope scope(*tracker_, {"split"}, "split");
      call(MPI_Comm_split(comm_, color, key, &sub));
    }
    return std::make_unique<MpiCommunicator>(sub, timeout_s_);
  }

  [[noreturn]] void abort(const std::string& why, int code) override {
    detail::abort_job(why, code);
  }

 private:
  int count(size_t left) const { return static_cast<int>(std::min(left, max_)); }

  std::unique_ptr<Request> start(void* data, size_t bytes, int peer, int tag, const char* kind) {
    const bool send = std::strcmp(kind, "send") == 0;
    check_peer(peer, send ? "isend to rank" : "irecv from rank");
    check_tag(tag);
    const Op op{kind, "bytes", bytes, peer, tag};
    Scope scope(*tracker_, op, nullptr);
    std::vector<MPI_Request> reqs;
    std::vector<int> chunks_bytes;
    char* p = static_cast<char*>(data);
    // Chunks of one message share the tag: MPI keeps messages between two ranks on one tag in
    // order. An empty message is one empty chunk.
    const size_t chunks = std::max<size_t>(1, (bytes + max_ - 1) / max_);
    for (size_t k = 0; k < chunks; ++k) {
      const size_t off = k * max_;
      const int n = bytes == 0 ? 0 : count(bytes - off);
      MPI_Request r = MPI_REQUEST_NULL;
      call(send ? MPI_Isend(p + off, n, MPI_BYTE, peer, tag, comm_, &r)
                : MPI_Irecv(p + off, n, MPI_BYTE, peer, tag, comm_, &r));
      reqs.push_back(r);
      chunks_bytes.push_back(n);
    }
    return std::make_unique<MpiRequest>(*tracker_, op, std::move(reqs), std::move(chunks_bytes));
  }

  void call(int rc) {
    if (rc != MPI_SUCCESS) tracker_->failed(rc);
  }

  template <typename T>
  void all_reduce(T* data, size_t n, MPI_Datatype type, const char* unit, const char* what, MPI_Op op = MPI_SUM) {
    Scope scope(*tracker_, {"all_reduce", unit, n}, what);
    for (size_t off = 0; off < n; off += max_)
      call(MPI_Allreduce(MPI_IN_PLACE, data + off, count(n - off), type, op, comm_));
  }

  template <typename T>
  void bcast(T* data, size_t n, MPI_Datatype type, int root) {
    for (size_t off = 0; off < n; off += max_) call(MPI_Bcast(data + off, count(n - off), type, root, comm_));
  }

  void check_peer(int peer, const char* role) const {
    STRATA_CHECK(peer >= 0 && peer < size_, role, " ", peer, " is not a rank of this communicator (size ", size_, ")");
  }
  void check_tag(int tag) const {
    STRATA_CHECK(tag >= 0 && tag <= tag_ub_, "message tag ", tag, " is not between 0 and MPI_TAG_UB=", tag_ub_);
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1, tag_ub_ = 32767;
  double timeout_s_;
  size_t max_;
  std::unique_ptr<Tracker> tracker_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(double timeout_s) {
  STRATA_CHECK(std::isfinite(timeout_s) && timeout_s > 0,
               "the collective timeout (ddp_timeout) must be a positive number of seconds, got ", timeout_s);
  const Layout layout = detect_layout();
  detail::init_mpi();
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // A launcher that started N processes without wiring up MPI (srun without PMI support,
  // torchrun) leaves N independent one-process jobs; each would train alone.
  if (layout.source != "single process" && layout.world_size != size)
    fail(layout.source, " started this process as rank ", layout.rank, " of ", layout.world_size, ", but MPI sees ",
         size, size == 1 ? " process" : " processes",
         ": start the job with mpirun (or srun with an MPI plug-in the MPI library supports)");
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  return std::make_unique<MpiCommunicator>(comm, timeout_s);
}

}  // namespace strata::dist
