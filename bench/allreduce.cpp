// All-reduce bandwidth: strata's Communicator::all_reduce_sum against a raw MPI_Allreduce
// (in place, MPI_SUM, MPI_FLOAT, MPI_COMM_WORLD) in the same run, on float buffers of 1, 4,
// 16, 64 and 256 MiB. Bandwidths as nccl-tests define them: algbw = bytes / time, busbw =
// algbw * 2 (n - 1) / n for n ranks. Each time is the slowest rank's, after a barrier; the
// two implementations alternate (which goes first alternates too) and each figure is the
// median of --reps timed calls after --warmup untimed ones. A last line times a one-float
// all-reduce, where strata's per-call work (watchdog bookkeeping, chunk loop) is not hidden
// behind the transfer. "others" is the share of the machine's CPU time that other processes
// took meanwhile: rows with a large share were measured on a busy machine. Prints one table
// and the machine (docs/distributed.md).
//
//   mpirun -np 2 bench_allreduce [--reps 21] [--warmup 2] [--small-reps 2000] [--sizes-kib 64,256,1024]
// --sizes-kib times other sizes (KiB) instead: slow links (strata study's netns hosts at
// 100 Mbit/s, whose all-reduce model catalog/links.yaml fits) need small ones.
#include <mpi.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "dist/communicator.h"
#include "util/error.h"

namespace {

struct Options {
  int reps = 21, warmup = 2, small_reps = 2000;
  std::vector<size_t> sizes_kib;  // empty: 1, 4, 16, 64 and 256 MiB
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) strata::fail("bench_allreduce: ", a, " needs a value");
    if (a == "--sizes-kib") {
      for (const char* p = argv[++i]; *p;) {
        char* end = nullptr;
        const long kib = std::strtol(p, &end, 10);
        if (end == p || kib < 1) strata::fail("bench_allreduce: --sizes-kib expects sizes in KiB, e.g. 64,256,1024");
        o.sizes_kib.push_back(static_cast<size_t>(kib));
        p = *end == ',' ? end + 1 : end;
      }
      continue;
    }
    const int v = std::atoi(argv[++i]);
    if (a == "--reps") o.reps = v;
    else if (a == "--warmup") o.warmup = v;
    else if (a == "--small-reps") o.small_reps = v;
    else strata::fail("bench_allreduce: unknown option ", a, "; expected --reps, --warmup, --small-reps");
  }
  if (o.reps < 5 || o.warmup < 1 || o.small_reps < 5) strata::fail("bench_allreduce: need --reps >= 5, --warmup >= 1");
  return o;
}

std::string first_line_with(const char* path, const char* key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) {
      const size_t p = line.find(':');
      std::string v = p == std::string::npos ? line : line.substr(p + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  return "?";
}

std::string machine_line(int ranks) {
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string mpi = lib;
  mpi = mpi.substr(0, mpi.find_first_of(",\n"));
  return strata::cat(first_line_with("/proc/cpuinfo", "model name"), ", ", sysconf(_SC_NPROCESSORS_ONLN), " cpus, ",
                     first_line_with("/proc/meminfo", "MemTotal"), "; ", mpi, "; ", ranks, " ranks on one host");
}

// CPU seconds since boot: busy (all but idle and iowait) and total, from /proc/stat.
std::pair<double, double> machine_cpu() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  unsigned long long v[8] = {};
  in >> cpu;
  for (auto& x : v) in >> x;
  unsigned long long total = 0;
  for (auto x : v) total += x;
  const double tick = double(sysconf(_SC_CLK_TCK));
  return {double(total - v[3] - v[4]) / tick, double(total) / tick};
}

// CPU seconds of every rank together.
double job_cpu() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  double s = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return s;
}

// Share of the machine's CPU time that other processes used since the last call: the
// benchmark's ranks spin while they wait, so on a quiet machine this is near 0.
double others_share() {
  static std::pair<double, double> last_machine = machine_cpu();
  static double last_job = job_cpu();
  const auto m = machine_cpu();
  const double j = job_cpu();
  const double total = m.second - last_machine.second;
  const double others = (m.first - last_machine.first) - (j - last_job);
  last_machine = m;
  last_job = j;
  return total > 0 ? std::max(0.0, others / total) : 0.0;
}

// Seconds of one call on the slowest rank, all ranks starting together.
double time_once(const std::function<void()>& op) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  op();
  double t = MPI_Wtime() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Medians of `reps` alternating timed calls of a and b, after `warmup` calls of each.
std::pair<double, double> compare(const std::function<void()>& a, const std::function<void()>& b, int reps,
                                  int warmup) {
  for (int i = 0; i < warmup; ++i) {
    a();
    b();
  }
  std::vector<double> ta, tb;
  for (int i = 0; i < reps; ++i) {
    if (i % 2 == 0) {
      ta.push_back(time_once(a));
      tb.push_back(time_once(b));
    } else {
      tb.push_back(time_once(b));
      ta.push_back(time_once(a));
    }
  }
  return {median(ta), median(tb)};
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  auto comm = strata::dist::make_mpi_communicator(600);
  const int n = comm->size();
  const bool main = comm->rank() == 0;
  const double bus_factor = 2.0 * (n - 1) / n;
  if (main) {
    std::printf("# all-reduce, float sum in place, %d ranks; median of %d after %d warm-up; GB/s = 1e9 B/s\n", n,
                o.reps, o.warmup);
    std::printf("# %8s | %10s %8s %8s | %10s %8s %8s | %6s | %6s\n", "size", "strata ms", "algbw", "busbw",
                "MPI ms", "algbw", "busbw", "ratio", "others");
  }
  others_share();
  std::vector<size_t> sizes_kib = o.sizes_kib;
  if (sizes_kib.empty()) sizes_kib = {1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10};
  for (size_t kib : sizes_kib) {
    const size_t bytes = kib << 10, count = bytes / sizeof(float);
    // One buffer for both, so where its pages landed cannot favour either. Ones: every sum
    // multiplies by n, so values stay exact powers of n, far from overflow and denormals.
    std::vector<float> buf(count, 1.0f);
    const auto [ts, tm] = compare([&] { comm->all_reduce_sum(buf.data(), count, "bench"); },
                                  [&] { MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(count), MPI_FLOAT,
                                                      MPI_SUM, MPI_COMM_WORLD); },
                                  o.reps, o.warmup);
    const double alg_s = double(bytes) / ts / 1e9, alg_m = double(bytes) / tm / 1e9;
    const double others = others_share();
    if (main)
      std::printf("  %5zu %s | %10.3f %8.2f %8.2f | %10.3f %8.2f %8.2f | %6.3f | %5.0f%%\n",
                  kib % 1024 ? kib : kib / 1024, kib % 1024 ? "KiB" : "MiB", ts * 1e3, alg_s,
                  alg_s * bus_factor, tm * 1e3, alg_m, alg_m * bus_factor, alg_s / alg_m, 100 * others);
  }
  float x = 0.0f, y = 0.0f;  // zeros: 2000 doublings of ones would overflow
  const auto [ts, tm] = compare([&] { comm->all_reduce_sum(&x, 1, "bench small"); },
                                [&] { MPI_Allreduce(MPI_IN_PLACE, &y, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); },
                                o.small_reps, o.warmup);
  if (main) {
    std::printf("# one float (median of %d): strata %.2f us, MPI %.2f us, difference %.2f us per call\n",
                o.small_reps, ts * 1e6, tm * 1e6, (ts - tm) * 1e6);
    std::printf("# machine: %s\n", machine_line(n).c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const strata::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
