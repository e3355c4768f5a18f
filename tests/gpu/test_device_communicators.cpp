// The communicators of GPU ranks against the MPI one: every collective on device buffers
// through NCCL (dist/nccl_communicator.h), or through MPI with host staging
// (dist/staged_communicator.h), and the same inputs on host buffers through the control
// communicator (MPI under mpirun, the single-process one alone), must give the same values.
// Inputs are small integers, so sums are exact in any order and the comparison is equality.
// Also: the compute stream's ops before and after a collective see it in order, host buffers
// pass through to the control communicator, sub-groups, and point-to-point messages (2+ ranks).
//
//   strata_device_comm_check           NCCL: one process (world size 1), or one per GPU under mpirun
//   strata_device_comm_check --staged  MPI with host staging: under mpirun, ranks may share a GPU
//                                      (or each have an emulated one: STRATA_EMULATED_GPU=1)
//   strata_device_comm_check --hang    a NCCL receive nobody sends: the watchdog must stop the
//                                      process within its 2 s timeout, naming the rank and the message
// Exit status: 0 all passed, 1 some failed, 77 no GPU. One line per check, not stopping at the first failure.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dist/communicator.h"
#include "dist/nccl_communicator.h"
#include "dist/staged_communicator.h"
#include "kernels/device.h"
#include "kernels/ops.h"

using namespace strata;

namespace {

int failures = 0;

void report(const std::string& name, bool ok, const std::string& detail = "") {
  std::printf("%-44s %s%s%s\n", name.c_str(), ok ? "ok" : "FAIL", detail.empty() ? "" : "  ", detail.c_str());
  std::fflush(stdout);
  if (!ok) ++failures;
}

// A buffer of the current GPU with a host mirror.
template <typename T>
struct DeviceArray {
  explicit DeviceArray(size_t n_) : n(n_), p(static_cast<T*>(kernels::device_alloc(gpu(), bytes()))) {}
  ~DeviceArray() { kernels::device_free(gpu(), p, bytes()); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  static kernels::Device gpu() { return kernels::current_device(); }
  size_t bytes() const { return std::max<size_t>(n, 1) * sizeof(T); }
  void upload(const std::vector<T>& v) { kernels::copy_bytes(p, gpu(), v.data(), kernels::Device::cpu(), n * sizeof(T)); }
  std::vector<T> download() const {
    std::vector<T> v(n);
    kernels::copy_bytes(v.data(), kernels::Device::cpu(), p, gpu(), n * sizeof(T));
    return v;
  }
  size_t n;
  T* p;
};

// Integers in [-8, 8], different on every rank and call.
template <typename T>
std::vector<T> inputs(size_t n, int rank, uint64_t salt) {
  std::mt19937_64 rng(salt * 1000003 + static_cast<uint64_t>(rank));
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(static_cast<int>(rng() % 17) - 8);
  return v;
}

template <typename T>
bool same(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

const std::vector<size_t> kSizes = {1, 7, 4099, (size_t{1} << 20) + 3};

// An in-place operation on the same inputs: through NCCL on a device buffer, and through the
// reference on a host one.
template <typename T, typename OnDevice, typename OnHost>
void check_in_place(const std::string& name, size_t n, int rank, uint64_t salt, OnDevice on_device, OnHost on_host) {
  std::vector<T> host = inputs<T>(n, rank, salt);
  DeviceArray<T> dev(n);
  dev.upload(host);
  on_device(dev.p);
  on_host(host.data());
  report(name, same(dev.download(), host));
}

void check_all_reduce(dist::Communicator& nccl, dist::Communicator& ref) {
  const int rank = nccl.rank();
  for (size_t n : kSizes) {
    const std::string at = " n=" + std::to_string(n);
    check_in_place<float>(
        "all_reduce_sum float" + at, n, rank, n, [&](float* d) { nccl.all_reduce_sum(d, n, "check float sum"); },
        [&](float* h) { ref.all_reduce_sum(h, n, "reference"); });
    check_in_place<double>(
        "all_reduce_sum double" + at, n, rank, n + 1, [&](double* d) { nccl.all_reduce_sum(d, n, "check double sum"); },
        [&](double* h) { ref.all_reduce_sum(h, n, "reference"); });
    check_in_place<float>(
        "all_reduce_max" + at, n, rank, n + 2, [&](float* d) { nccl.all_reduce_max(d, n, "check max"); },
        [&](float* h) { ref.all_reduce_max(h, n, "reference"); });
  }
}

void check_shards(dist::Communicator& nccl, dist::Communicator& ref) {
  const size_t ranks = static_cast<size_t>(nccl.size());
  const int rank = nccl.rank();
  for (size_t per : {size_t{5}, size_t{4099}}) {
    {
      const std::vector<float> in = inputs<float>(per * ranks, rank, per);
      std::vector<float> out(per);
      DeviceArray<float> din(per * ranks), dout(per);
      din.upload(in);
      nccl.reduce_scatter_sum(din.p, dout.p, per, "check reduce_scatter");
      ref.reduce_scatter_sum(in.data(), out.data(), per, "reference");
      report("reduce_scatter_sum per_rank=" + std::to_string(per), same(dout.download(), out));
    }
    {
      const std::vector<float> in = inputs<float>(per, rank, per + 1);
      std::vector<float> out(per * ranks);
      DeviceArray<float> din(per), dout(per * ranks);
      din.upload(in);
      nccl.all_gather(din.p, dout.p, per, "check all_gather");
      ref.all_gather(in.data(), out.data(), per, "reference");
      report("all_gather per_rank=" + std::to_string(per), same(dout.download(), out));
    }
  }
  for (int root : {0, nccl.size() - 1})  // the others' data stays as it was
    check_in_place<float>(
        "reduce_sum root=" + std::to_string(root), 4099, rank, 7 + static_cast<uint64_t>(root),
        [&](float* d) { nccl.reduce_sum(d, 4099, root, "check reduce"); },
        [&](float* h) { ref.reduce_sum(h, 4099, root, "reference"); });
  std::vector<size_t> counts;  // unequal blocks, the last shortest (ZeRO's flat buffer)
  for (size_t r = 0; r < ranks; ++r) counts.push_back(r + 1 == ranks ? 3 : 4099 + r);
  size_t total = 0;
  for (size_t c : counts) total += c;
  check_in_place<float>(
      "all_gather_v", total, rank, 11, [&](float* d) { nccl.all_gather_v(d, counts, "check all_gather_v"); },
      [&](float* h) { ref.all_gather_v(h, counts, "reference"); });
  const int root = nccl.size() - 1;
  check_in_place<float>(
      "broadcast root=" + std::to_string(root), 1001, rank, 13,
      [&](float* d) { nccl.broadcast(d, 1001 * sizeof(float), root, "check broadcast"); },
      [&](float* h) { ref.broadcast(h, 1001 * sizeof(float), root, "reference"); });
}

// Ops queued on the compute stream before and after a collective see it in order: fill, sum,
// scale, with no host synchronisation in between.
void check_stream_order(dist::Communicator& nccl) {
  const size_t n = (size_t{1} << 22) + 1;  // long enough that a missing wait would show
  DeviceArray<float> dev(n);
  kernels::fill(dev.p, n, 1.5f);
  nccl.all_reduce_sum(dev.p, n, "check ordering");
  kernels::scale(dev.p, n, 2.0f);
  const std::vector<float> got = dev.download();
  const float want = 3.0f * static_cast<float>(nccl.size());
  size_t wrong = 0;
  for (float x : got) wrong += x != want;
  report("compute -> collective -> compute in order", wrong == 0, wrong ? std::to_string(wrong) + " values wrong" : "");
}

void check_host_pass_through(dist::Communicator& nccl, dist::Communicator& ref) {
  std::vector<double> a = inputs<double>(9, nccl.rank(), 17), b = a;
  nccl.all_reduce_sum(a.data(), a.size(), "host scalars");
  ref.all_reduce_sum(b.data(), b.size(), "reference");
  const auto bytes = nccl.all_gather_bytes("rank " + std::to_string(nccl.rank()), "names");
  bool names = bytes.size() == static_cast<size_t>(nccl.size());
  for (size_t r = 0; names && r < bytes.size(); ++r) names = bytes[r] == "rank " + std::to_string(r);
  report("host buffers go to the control communicator", same(a, b) && names);
}

void check_split(dist::Communicator& nccl, dist::Communicator& ref) {
  const int color = nccl.rank() % 2;
  auto sub = nccl.split(color, nccl.rank());
  auto ref_sub = ref.split(color, ref.rank());
  std::vector<float> host = inputs<float>(4099, nccl.rank(), 19);
  DeviceArray<float> dev(host.size());
  dev.upload(host);
  sub->all_reduce_sum(dev.p, host.size(), "check sub-group");
  ref_sub->all_reduce_sum(host.data(), host.size(), "reference");
  report("split by rank parity, all_reduce_sum", same(dev.download(), host) && sub->size() == ref_sub->size());
}

// A ring: each rank sends to the next and receives from the previous (pipeline stages' pattern).
void check_point_to_point(dist::Communicator& nccl) {
  if (nccl.size() < 2) {
    report("isend / irecv ring", true, "skipped: one rank");
    return;
  }
  const int next = (nccl.rank() + 1) % nccl.size(), prev = (nccl.rank() + nccl.size() - 1) % nccl.size();
  const std::vector<float> mine = inputs<float>(70001, nccl.rank(), 23);
  DeviceArray<float> out(mine.size()), in(mine.size());
  out.upload(mine);
  auto r = nccl.irecv(in.p, in.bytes(), prev, 5);
  auto s = nccl.isend(out.p, out.bytes(), next, 5);
  s->wait();
  r->wait();
  report("isend / irecv ring", same(in.download(), inputs<float>(mine.size(), prev, 23)));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool hang = mode == "--hang", staged = mode == "--staged";
  const dist::Layout layout = dist::detect_layout();
  if (kernels::cuda_device_count() == 0) {
    std::printf("skipped: %s\n", kernels::cuda_unavailable_reason().c_str());
    return 77;
  }
  kernels::use_device(kernels::Device::cuda(layout.local_rank % kernels::cuda_device_count()));
  auto control = [&] {
    return layout.world_size > 1 ? dist::make_mpi_communicator(60) : dist::make_single_process_communicator();
  };
  if (hang) {
    auto nccl = dist::make_nccl_communicator(control(), 2.0);
    DeviceArray<float> dev(4);
    nccl->recv(dev.p, dev.bytes(), nccl->rank(), 0);  // nobody sends it
    std::this_thread::sleep_for(std::chrono::seconds(60));
    std::printf("the watchdog did not stop the process\n");
    return 1;
  }
  auto ref = control();
  auto nccl = staged ? dist::make_staged_communicator(control()) : dist::make_nccl_communicator(control(), 60);
  if (nccl->rank() == 0)
    std::printf("%s communicator: %d rank(s), %s\n", staged ? "staged MPI" : "NCCL", nccl->size(),
                kernels::describe_device(kernels::current_device()).c_str());
  check_all_reduce(*nccl, *ref);
  check_shards(*nccl, *ref);
  check_stream_order(*nccl);
  check_host_pass_through(*nccl, *ref);
  check_split(*nccl, *ref);
  check_point_to_point(*nccl);
  std::printf("%s\n", failures ? "FAILED" : "all passed");
  return failures ? 1 : 0;
}
