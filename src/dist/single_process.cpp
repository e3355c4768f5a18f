// The one-process communicator: every collective over a group of one is the identity, so the
// Trainer runs the same code with and without MPI.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "dist/communicator.h"
#include "util/error.h"

namespace strata::dist {
namespace {

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void all_reduce_sum(float*, size_t, const char*) override {}
  void all_reduce_sum(double*, size_t, const char*) override {}
  void all_reduce_max(float*, size_t, const char*) override {}
  void reduce_scatter_sum(const float* in, float* out, size_t n, const char*) override { copy(in, out, n); }
  void all_gather(const float* in, float* out, size_t n, const char*) override { copy(in, out, n); }
  void reduce_sum(float*, size_t, int root, const char* what) override { check_peer(root, what); }
  void all_gather_v(float*, const std::vector<size_t>& counts, const char* what) override {
    STRATA_CHECK(counts.size() == 1, "all_gather_v '", what, "': ", counts.size(), " counts for 1 rank");
  }
  std::vector<std::string> all_gather_bytes(const std::string& mine, const char*) override { return {mine}; }
  void broadcast(void*, size_t, int root, const char* what) override { check_peer(root, what); }
  // A message to oneself has no matching receive in a blocking, single-threaded caller.
  void send(const void*, size_t, int peer, int) override { fail("send to rank ", peer, " in a single-process run"); }
  void recv(void*, size_t, int peer, int) override { fail("recv from rank ", peer, " in a single-process run"); }
  std::unique_ptr<Request> isend(const void*, size_t, int peer, int) override {
    fail("isend to rank ", peer, " in a single-process run");
  }
  std::unique_ptr<Request> irecv(void*, size_t, int peer, int) override {
    fail("irecv from rank ", peer, " in a single-process run");
  }
  void barrier(const char*) override {}
  void quiet_barrier(const char*) override {}
  std::unique_ptr<Communicator> split(int, int) override { return std::make_unique<SingleProcess>(); }
  [[noreturn]] void abort(const std::string& why, int code) override {
    std::fprintf(stderr, "%s\n", why.c_str());
    std::fflush(nullptr);
    std::_Exit(code);
  }

 private:
  static void copy(const float* in, float* out, size_t n) {
    if (in != out && n) std::memcpy(out, in, n * sizeof(float));
  }
  static void check_peer(int root, const char* what) {
    STRATA_CHECK(root == 0, "collective '", what, "' rooted at rank ", root, " in a single-process run");
  }
};

}  // namespace

std::unique_ptr<Communicator> make_single_process_communicator() { return std::make_unique<SingleProcess>(); }

}  // namespace strata::dist
