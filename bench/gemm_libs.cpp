// bench_gemm_libs: choose strata's CPU matrix-product library by measurement.
//
// OpenBLAS (OpenMP build), BLIS (OpenMP build) and oneDNN are loaded side by side into
// one process with dlopen, so every ratio below is taken in the same run, on the same
// buffers, with the library calls interleaved rep by rep (a burst of noise on this
// shared box hits all libraries alike instead of whichever happened to run then).
// OpenBLAS and BLIS both export cblas_sgemm, hence RTLD_LOCAL|RTLD_DEEPBIND.
//
// Shapes: BERT-base training, batch 32 x seq 128 (M = 4096 tokens), hidden 768,
// FFN 3072, 12 heads of 64. For each Linear y = x W^T (x [M,in], W [out,in]) the three
// products of a training step:
//   fwd   y  = x  . W^T   (M x out x in)
//   bwdD  dx = dy . W     (M x in  x out)
//   bwdW  dW = dy^T . x   (out x in x M)
// plus attention per (batch, head), 384 independent small products:
//   scores  S = Q . K^T   (128 x 128 x 64)
//   context C = P . V     (128 x 64 x 128)
// each run (a) serially, one library call per product with the library on N threads,
// and (b) as an OpenMP parallel-for over the 384 products, each call single-threaded.
//
// Build: the bench_gemm_libs CMake target, or standalone:
//   g++ -std=c++20 -O2 -fopenmp bench/gemm_libs.cpp -ldl -o /tmp/gemm_libs
// Run:   bench_gemm_libs [--threads N] [--reps N] [--quick] [--attempts N] [--wait S]
//                        [--nested-as-is]
//                        [--openblas PATH] [--blis PATH] [--dnnl PATH]
//                        [--openblas-core NAME|none]
// Results and the decision they led to: docs/gemm.md.

#include <dlfcn.h>
#include <omp.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

// ---- library ABIs (declared here so no vendor header is needed) -------------------
// CBLAS enums: CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112. Both Debian
// builds use 32-bit BLAS integers.
using cblas_sgemm_fn = void (*)(int, int, int, int, int, int, float, const float*, int,
                                const float*, int, float, float*, int);
// oneDNN: row-major, 'N'/'T', dnnl_dim_t = int64_t, returns dnnl_status_t (0 = ok).
using dnnl_sgemm_fn = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*,
                              int64_t, const float*, int64_t, float, float*, int64_t);
struct dnnl_version_t {
  int major, minor, patch;
  const char* hash;
  unsigned cpu_runtime, gpu_runtime;
};

constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

struct Lib {
  std::string name, path, info;
  void* handle = nullptr;
  cblas_sgemm_fn cblas = nullptr;
  dnnl_sgemm_fn dnnl = nullptr;
  void (*openblas_set_threads)(int) = nullptr;      // openblas_set_num_threads
  void (*blis_set_threads)(int64_t) = nullptr;      // bli_thread_set_num_threads (dim_t)

  // Library thread count first (OpenBLAS's setter calls omp_set_num_threads itself),
  // then the OpenMP ICV, which oneDNN reads through omp_get_max_threads().
  void set_threads(int n) const {
    if (openblas_set_threads) openblas_set_threads(n);
    if (blis_set_threads) blis_set_threads(n);
    omp_set_num_threads(n);
  }

  // Row-major C[M,N] = op(A) . op(B), alpha 1, beta 0.
  void gemm(bool ta, bool tb, int M, int N, int K, const float* A, int lda, const float* B,
            int ldb, float* C, int ldc) const {
    if (cblas) {
      cblas(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, M, N, K, 1.0f, A, lda,
            B, ldb, 0.0f, C, ldc);
    } else {
      int st = dnnl(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
      if (st != 0) {
        std::fprintf(stderr, "dnnl_sgemm failed with status %d\n", st);
        std::exit(1);
      }
    }
  }
};

template <class F>
F sym(void* h, const char* name) {
  return reinterpret_cast<F>(dlsym(h, name));
}

// OpenBLAS's DYNAMIC_ARCH build picks its kernels once, in its load-time constructor,
// from cpuid or from OPENBLAS_CORETYPE. To have both the auto-detected and a forced
// kernel set in one process, the forced one is loaded from a private copy of the .so
// (glibc loads a second instance for a different file), with OPENBLAS_CORETYPE set only
// around that dlopen. The copy is unlinked right after loading.
void* dlopen_private_copy(const std::string& path, const std::string& env_name,
                          const std::string& env_value, std::string* err) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *err = "cannot read " + path;
    return nullptr;
  }
  char tmpl[] = "/tmp/strata_gemm_libs_XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) {
    *err = "mkstemp failed";
    return nullptr;
  }
  std::vector<char> buf(1 << 20);
  bool ok = true;
  while (ok && in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    std::streamsize n = in.gcount();
    for (std::streamsize off = 0; ok && off < n;) {
      ssize_t w = write(fd, buf.data() + off, size_t(n - off));
      if (w <= 0) ok = false;
      else off += w;
    }
  }
  close(fd);
  void* h = nullptr;
  if (ok) {
    const char* old = std::getenv(env_name.c_str());
    std::string saved = old ? old : "";
    setenv(env_name.c_str(), env_value.c_str(), 1);
    h = dlopen(tmpl, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!h) *err = dlerror();
    if (old) setenv(env_name.c_str(), saved.c_str(), 1);
    else unsetenv(env_name.c_str());
  } else {
    *err = "cannot write the private copy";
  }
  unlink(tmpl);
  return h;
}

bool load_blas(Lib& lib, const std::string& force_core = "") {
  std::string err;
  lib.handle = force_core.empty()
                   ? dlopen(lib.path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND)
                   : dlopen_private_copy(lib.path, "OPENBLAS_CORETYPE", force_core, &err);
  if (!lib.handle && err.empty()) err = dlerror();
  if (!lib.handle) {
    std::printf("# %-8s not loaded: %s\n", lib.name.c_str(), err.c_str());
    return false;
  }
  lib.cblas = sym<cblas_sgemm_fn>(lib.handle, "cblas_sgemm");
  if (!lib.cblas) {
    std::printf("# %-8s has no cblas_sgemm\n", lib.name.c_str());
    return false;
  }
  std::ostringstream os;
  if (dlsym(lib.handle, "openblas_get_config")) {
    lib.openblas_set_threads = sym<void (*)(int)>(lib.handle, "openblas_set_num_threads");
    auto config = sym<char* (*)()>(lib.handle, "openblas_get_config");
    auto core = sym<char* (*)()>(lib.handle, "openblas_get_corename");
    os << (config ? config() : "?") << "; core " << (core ? core() : "?");
  } else {
    lib.blis_set_threads = sym<void (*)(int64_t)>(lib.handle, "bli_thread_set_num_threads");
    auto ver = sym<const char* (*)()>(lib.handle, "bli_info_get_version_str");
    auto arch_id = sym<int (*)()>(lib.handle, "bli_arch_query_id");
    auto arch_str = sym<const char* (*)(int)>(lib.handle, "bli_arch_string");
    auto omp = sym<int64_t (*)()>(lib.handle, "bli_info_get_enable_openmp");
    os << "BLIS " << (ver ? ver() : "?") << "; arch "
       << (arch_id && arch_str ? arch_str(arch_id()) : "?") << "; openmp "
       << (omp ? (omp() ? "yes" : "no") : "?");
  }
  lib.info = os.str();
  return true;
}

bool load_dnnl(Lib& lib) {
  // oneDNN exports no cblas_* symbols; RTLD_LOCAL is enough (DEEPBIND on a C++ library
  // risks binding libstdc++ twice).
  lib.handle = dlopen(lib.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib.handle) {
    std::printf("# %-8s not loaded: %s\n", lib.name.c_str(), dlerror());
    return false;
  }
  lib.dnnl = sym<dnnl_sgemm_fn>(lib.handle, "dnnl_sgemm");
  if (!lib.dnnl) {
    std::printf("# %-8s has no dnnl_sgemm\n", lib.name.c_str());
    return false;
  }
  std::ostringstream os;
  auto version = sym<const dnnl_version_t* (*)()>(lib.handle, "dnnl_version");
  auto isa = sym<int (*)()>(lib.handle, "dnnl_get_effective_cpu_isa");
  auto isa2str = sym<const char* (*)(int)>(lib.handle, "dnnl_cpu_isa2str");
  if (version) {
    const dnnl_version_t* v = version();
    os << "oneDNN " << v->major << "." << v->minor << "." << v->patch << " ("
       << (v->hash ? v->hash : "?") << "); cpu runtime "
       << (v->cpu_runtime == 2u ? "OMP" : std::to_string(v->cpu_runtime));
  }
  if (isa && isa2str) os << "; isa " << isa2str(isa());
  lib.info = os.str();
  return true;
}

// ---- machine description --------------------------------------------------------
std::string read_first(const char* path, const char* key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) {
      auto p = line.find(':');
      std::string v = p == std::string::npos ? line : line.substr(p + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  return "?";
}

std::string machine_line() {
  std::string flags(1, ' ');
  flags.append(read_first("/proc/cpuinfo", "flags")).push_back(' ');
  std::string have;
  for (const char* f : {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16",
                        "avx512_vnni", "avx_vnni", "amx_tile"}) {
    std::string key(1, ' ');
    key.append(f).push_back(' ');
    if (flags.find(key) != std::string::npos) have.append(f).push_back(' ');
  }
  if (!have.empty()) have.pop_back();
  std::ostringstream os;
  os << read_first("/proc/cpuinfo", "model name") << " (family "
     << read_first("/proc/cpuinfo", "cpu family") << " model "
     << read_first("/proc/cpuinfo", "model\t") << "), " << sysconf(_SC_NPROCESSORS_ONLN)
     << " cpus, " << read_first("/proc/meminfo", "MemTotal") << ", flags: " << have;
  return os.str();
}

// Aggregate CPU counters from /proc/stat: busy, steal (a KVM guest's time taken by the
// host), total. Printed before/after so a reader can tell whether the box was quiet.
struct CpuStat {
  unsigned long long busy = 0, idle = 0, steal = 0, total = 0;
};
CpuStat cpu_stat() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  unsigned long long v[10] = {};
  in >> cpu;
  for (auto& x : v) in >> x;
  CpuStat s;
  for (int k = 0; k < 8; ++k) s.total += v[k];  // guest time is already in user
  s.idle = v[3] + v[4];
  s.steal = v[7];
  s.busy = s.total - s.idle;
  return s;
}
double own_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}
// Share of the machine used by other processes between two snapshots.
struct Noise {
  CpuStat cs;
  double own;
  static Noise now() { return {cpu_stat(), own_cpu_seconds()}; }
  static double other_share(const Noise& a, const Noise& b) {
    const double tick = double(sysconf(_SC_CLK_TCK));
    const double total = double(b.cs.total - a.cs.total) / tick;
    const double busy = double(b.cs.busy - a.cs.busy - (b.cs.steal - a.cs.steal)) / tick;
    return total > 0 ? std::max(0.0, busy - (b.own - a.own)) / total : 0.0;
  }
};
std::string loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

// ---- shapes ----------------------------------------------------------------------
enum class Mode { Single, Serial, ParFor };

struct Shape {
  std::string layer, op;
  int M, N, K;
  bool ta, tb;
  int batch;  // independent products (attention), 1 for Linear
  Mode mode;
  double flops() const { return 2.0 * M * N * K * batch; }
  int lda() const { return ta ? M : K; }
  int ldb() const { return tb ? K : N; }
};

struct Buffers {
  std::vector<float> A, B, C;
};

Buffers make_buffers(const Shape& s, std::mt19937& rng) {
  Buffers b;
  b.A.resize(size_t(s.M) * s.K * s.batch);
  b.B.resize(size_t(s.K) * s.N * s.batch);
  b.C.resize(size_t(s.M) * s.N * s.batch);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& x : b.A) x = u(rng);
  for (auto& x : b.B) x = u(rng);
  return b;
}

struct Opts {
  int threads = 2;
  int reps = 5;
  int warmup = 1;
  bool quick = false;
  bool nested_as_is = false;  // ParFor: leave library thread counts at --threads
  int attempts = 3;           // re-measure a shape while other processes were busy...
  double quiet = 0.05;        // ...i.e. used at least this share of the machine
  double wait_budget = 60;    // seconds, whole run: wait for a quiet second before a retry
};

// Waits (from the run's shared budget) until one second passes in which other processes
// use less than o.quiet of the machine. Returns false when the budget ran out.
bool wait_for_quiet(double* budget, double quiet) {
  while (*budget > 0) {
    Noise a = Noise::now();
    usleep(1000000);
    *budget -= 1;
    if (Noise::other_share(a, Noise::now()) < quiet) return true;
  }
  return false;
}

// One timed unit: a single product, or all `batch` products of an attention shape.
double run_once(const Lib& lib, const Shape& s, Buffers& b, int threads, const Opts& o) {
  const size_t sa = size_t(s.M) * s.K, sb = size_t(s.K) * s.N, sc = size_t(s.M) * s.N;
  const int lda = s.lda(), ldb = s.ldb();
  auto t0 = std::chrono::steady_clock::now();
  if (s.mode == Mode::ParFor) {
    // Each call single-threaded. OpenBLAS's OpenMP build and oneDNN also drop to one
    // thread on their own inside a parallel region; --nested-as-is tests exactly that.
    lib.set_threads(o.nested_as_is ? threads : 1);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int i = 0; i < s.batch; ++i)
      lib.gemm(s.ta, s.tb, s.M, s.N, s.K, b.A.data() + i * sa, lda, b.B.data() + i * sb, ldb,
               b.C.data() + i * sc, s.N);
  } else {
    lib.set_threads(threads);
    for (int i = 0; i < s.batch; ++i)
      lib.gemm(s.ta, s.tb, s.M, s.N, s.K, b.A.data() + i * sa, lda, b.B.data() + i * sb, ldb,
               b.C.data() + i * sc, s.N);
  }
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(t1 - t0).count();
}

// Sampled check against a double-precision dot product: catches a wrong transpose flag,
// a wrong leading dimension, or a library that silently did nothing.
bool check(const Shape& s, const Buffers& b, std::mt19937& rng, double* worst) {
  const size_t sa = size_t(s.M) * s.K, sb = size_t(s.K) * s.N, sc = size_t(s.M) * s.N;
  const int lda = s.lda(), ldb = s.ldb();
  *worst = 0;
  for (int item : {0, s.batch / 2, s.batch - 1}) {
    const float* A = b.A.data() + item * sa;
    const float* B = b.B.data() + item * sb;
    const float* C = b.C.data() + item * sc;
    for (int t = 0; t < 24; ++t) {
      int i = int(rng() % s.M), j = int(rng() % s.N);
      double ref = 0, mag = 0;
      for (int k = 0; k < s.K; ++k) {
        double a = s.ta ? A[size_t(k) * lda + i] : A[size_t(i) * lda + k];
        double w = s.tb ? B[size_t(j) * ldb + k] : B[size_t(k) * ldb + j];
        ref += a * w;
        mag += std::fabs(a * w);
      }
      double err = std::fabs(C[size_t(i) * s.N + j] - ref) / (mag + 1e-30);
      *worst = std::max(*worst, err);
      if (!(err < 1e-5)) return false;  // also false for NaN
    }
  }
  return true;
}

struct Stat {
  double median = 0, min = 0, max = 0;
  double gflops(double flops) const { return flops / median * 1e-9; }
  double spread() const { return (max - min) / median; }
};

Stat summarize(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  Stat s;
  s.min = t.front();
  s.max = t.back();
  size_t n = t.size();
  s.median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  return s;
}

// Interleaved measurement of several (library, threads) variants on one shape: warm
// up each, check each, then `reps` rounds in which each variant runs once, the
// starting variant rotating from round to round.
struct Variant {
  const Lib* lib;
  int threads;
};

std::vector<Stat> measure(const Shape& s, const std::vector<Variant>& vs, Buffers& b,
                          const Opts& o, std::mt19937& rng) {
  for (const auto& v : vs) {
    std::fill(b.C.begin(), b.C.end(), -12345.0f);
    run_once(*v.lib, s, b, v.threads, o);
    double worst = 0;
    if (!check(s, b, rng, &worst)) {
      std::printf("# CHECK FAILED: %s on %s %s (rel err %.3g)\n", v.lib->name.c_str(),
                  s.layer.c_str(), s.op.c_str(), worst);
      std::exit(1);
    }
    for (int w = 1; w < o.warmup; ++w) run_once(*v.lib, s, b, v.threads, o);
  }
  std::vector<std::vector<double>> times(vs.size());
  for (int r = 0; r < o.reps; ++r)
    for (size_t k = 0; k < vs.size(); ++k) {
      size_t v = (k + r) % vs.size();
      times[v].push_back(run_once(*vs[v].lib, s, b, vs[v].threads, o));
    }
  std::vector<Stat> out;
  for (auto& t : times) out.push_back(summarize(t));
  return out;
}

// measure(), repeated (up to o.attempts times) while other processes used a noticeable
// share of the machine; keeps the quietest attempt and reports its noise share.
std::vector<Stat> measure_quiet(const Shape& s, const std::vector<Variant>& vs, Buffers& b,
                                const Opts& o, std::mt19937& rng, double* other_out) {
  static double wait_budget = o.wait_budget;
  std::vector<Stat> best;
  double best_other = 2;
  for (int attempt = 0; attempt < o.attempts; ++attempt) {
    Noise n0 = Noise::now();
    auto st = measure(s, vs, b, o, rng);
    double other = Noise::other_share(n0, Noise::now());
    if (other < best_other) best = st, best_other = other;
    if (other < o.quiet || attempt + 1 == o.attempts) break;
    std::fprintf(stderr, "  %s %s: other processes used %.0f%% of the machine, re-measuring\n",
                 s.layer.c_str(), s.op.c_str(), 100 * other);
    wait_for_quiet(&wait_budget, o.quiet);
  }
  *other_out = best_other;
  return best;
}

void usage(const char* argv0) {
  std::printf(
      "usage: %s [--threads N] [--reps N] [--quick] [--attempts N] [--wait S]\n"
      "          [--nested-as-is] [--openblas PATH] [--blis PATH] [--dnnl PATH]\n"
      "          [--openblas-core NAME|none]\n"
      "  --threads N      threads per library call / in the parallel loop (default 2)\n"
      "  --reps N         timed repetitions per shape and library, median reported (default 5)\n"
      "  --quick          3 reps, 1 attempt, no 1-vs-N thread section (smoke test only)\n"
      "  --attempts N     measure a shape up to N times while other processes use >= 5%% of\n"
      "                   the machine, keep the quietest attempt (default 3)\n"
      "  --wait S         seconds the whole run may spend waiting for a quiet machine\n"
      "                   before re-measuring (default 60)\n"
      "  --nested-as-is   attention parallel-for: leave library thread counts at N instead\n"
      "                   of setting 1 (tests the libraries' own nested-parallel handling)\n"
      "  --openblas-core NAME\n"
      "                   also run OpenBLAS with OPENBLAS_CORETYPE=NAME, loaded from a private\n"
      "                   copy of the library (default SkylakeX where the CPU has AVX-512,\n"
      "                   none elsewhere; none: skip)\n",
      argv0);
}

}  // namespace

int main(int argc, char** argv) {
  Opts o;
  std::string openblas_path = "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0";
  std::string blis_path = "/usr/lib/x86_64-linux-gnu/blis-openmp/libblis.so.4";
  std::string dnnl_path = "libdnnl.so.2";
  // The forced column uses OpenBLAS's AVX-512 kernels, which die with "Illegal instruction" on
  // a CPU without AVX-512: there it is left out unless asked for.
  const bool has_avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  std::string openblas_core = has_avx512 ? "SkylakeX" : "none";
  bool reps_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage(argv[0]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--threads") o.threads = std::max(1, std::atoi(next().c_str()));
    else if (a == "--reps") o.reps = std::max(1, std::atoi(next().c_str())), reps_given = true;
    else if (a == "--quick") o.quick = true;
    else if (a == "--attempts") o.attempts = std::max(1, std::atoi(next().c_str()));
    else if (a == "--wait") o.wait_budget = std::max(0.0, std::atof(next().c_str()));
    else if (a == "--nested-as-is") o.nested_as_is = true;
    else if (a == "--openblas") openblas_path = next();
    else if (a == "--blis") blis_path = next();
    else if (a == "--dnnl") dnnl_path = next();
    else if (a == "--openblas-core") openblas_core = next();
    else if (a == "-h" || a == "--help") { usage(argv[0]); return 0; }
    else { usage(argv[0]); return 2; }
  }
  for (const char* core : {"SkylakeX", "Cooperlake", "SapphireRapids"}) {
    if (!has_avx512 && strcasecmp(openblas_core.c_str(), core) == 0) {
      std::fprintf(stderr, "--openblas-core %s: OpenBLAS's %s kernels need AVX-512, which this CPU lacks; "
                           "use --openblas-core Haswell or none\n", core, core);
      return 2;
    }
  }
  if (o.quick && !reps_given) o.reps = 3;
  if (o.quick) o.attempts = 1;

  const auto wall0 = std::chrono::steady_clock::now();
  const CpuStat cs0 = cpu_stat();
  const double own0 = own_cpu_seconds();
  std::printf("# machine: %s\n", machine_line().c_str());
  std::printf("# loadavg at start: %s\n", loadavg().c_str());
  std::printf("# threads %d, reps %d (median), %d warmup call(s) per library and shape "
              "(the first one checked), up to %d attempts per shape, parallel-for %s\n",
              o.threads, o.reps, o.warmup, o.attempts,
              o.nested_as_is ? "with library threads left at N" : "with library threads set to 1");

  std::vector<Lib> all(4);
  all[0].name = "openblas", all[0].path = openblas_path;
  all[1].name = "ob-" + openblas_core, all[1].path = openblas_path;
  all[2].name = "blis", all[2].path = blis_path;
  all[3].name = "onednn", all[3].path = dnnl_path;
  std::vector<Lib*> libs;
  if (load_blas(all[0])) libs.push_back(&all[0]);
  if (openblas_core != "none" && load_blas(all[1], openblas_core)) libs.push_back(&all[1]);
  if (load_blas(all[2])) libs.push_back(&all[2]);
  if (load_dnnl(all[3])) libs.push_back(&all[3]);
  if (libs.empty()) {
    std::printf("no library loaded\n");
    return 1;
  }
  for (Lib* l : libs)
    std::printf("# %-12s %s%s\n#              %s\n", l->name.c_str(), l->path.c_str(),
                l->openblas_set_threads && l != &all[0] ? " (private copy, OPENBLAS_CORETYPE set)" : "",
                l->info.c_str());
  const bool have_openblas = libs.front()->name == "openblas";

  // ---- the shapes ----
  constexpr int kTokens = 32 * 128, kHidden = 768, kFFN = 3072, kHeads = 12, kHeadDim = 64;
  constexpr int kSeq = 128, kBatch = 32;
  std::vector<Shape> shapes;
  struct Layer { const char* name; int in, out; };
  for (Layer L : {Layer{"qkv", kHidden, 3 * kHidden}, Layer{"attn_out", kHidden, kHidden},
                  Layer{"ffn_up", kHidden, kFFN}, Layer{"ffn_down", kFFN, kHidden}}) {
    shapes.push_back({L.name, "fwd", kTokens, L.out, L.in, false, true, 1, Mode::Single});
    shapes.push_back({L.name, "bwdD", kTokens, L.in, L.out, false, false, 1, Mode::Single});
    shapes.push_back({L.name, "bwdW", L.out, L.in, kTokens, true, false, 1, Mode::Single});
  }
  const size_t n_linear = shapes.size();
  const int n_heads = kBatch * kHeads;
  for (Mode m : {Mode::Serial, Mode::ParFor}) {
    const char* tag = m == Mode::Serial ? "serial" : "parfor";
    shapes.push_back({std::string("QK^T x384 ") + tag, "", kSeq, kSeq, kHeadDim, false, true, n_heads, m});
    shapes.push_back({std::string("PV   x384 ") + tag, "", kSeq, kHeadDim, kSeq, false, false, n_heads, m});
  }

  std::mt19937 rng(12345);
  std::vector<Variant> vs;
  for (Lib* l : libs) vs.push_back({l, o.threads});
  std::vector<std::vector<Stat>> res;
  std::vector<double> noise;
  for (const Shape& s : shapes) {
    Buffers b = make_buffers(s, rng);
    double other = 0;
    res.push_back(measure_quiet(s, vs, b, o, rng, &other));
    noise.push_back(other);
    std::fprintf(stderr, "  measured %s %s\n", s.layer.c_str(), s.op.c_str());
  }

  // ---- the table ----
  auto dims = [](const Shape& s) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%dx%dx%d%s%s", s.M, s.N, s.K, s.ta ? " tA" : "", s.tb ? " tB" : "");
    return std::string(buf);
  };
  std::printf("\nGFLOP/s (median of %d; ratio to openblas; sprd = (max-min)/median of the times; "
              "other = share of the machine used by other processes while the row was measured)\n",
              o.reps);
  std::printf("%-20s %-20s", "", "");
  for (Lib* l : libs) std::printf(" | %-19s", l->name.c_str());
  std::printf("\n%-20s %-20s", "shape", "MxNxK");
  for (size_t k = 0; k < libs.size(); ++k) std::printf(" | %6s %5s %5s", "GF/s", "ratio", "sprd");
  std::printf(" | other\n");
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    if (i == n_linear) std::printf("%s\n", std::string(20 + 1 + 20 + libs.size() * 22 + 8, '-').c_str());
    std::string name = s.op.empty() ? s.layer : s.layer + " " + s.op;
    std::printf("%-20s %-20s", name.c_str(), dims(s).c_str());
    const double base = have_openblas ? res[i][0].gflops(s.flops()) : 0;
    for (size_t k = 0; k < libs.size(); ++k) {
      double g = res[i][k].gflops(s.flops());
      if (have_openblas) std::printf(" | %6.1f %5.2f %4.0f%%", g, g / base, 100 * res[i][k].spread());
      else std::printf(" | %6.1f %5s %4.0f%%", g, "n/a", 100 * res[i][k].spread());
    }
    std::printf(" | %4.0f%%%s\n", 100 * noise[i], noise[i] >= 0.10 ? " noisy" : "");
  }

  // Sustained rate over the 12 Linear products of one BERT layer: total flops / total
  // median time (flop-weighted, i.e. what a training step actually sees).
  std::printf("\nsustained over the %zu Linear products (sum flops / sum median times):\n", n_linear);
  std::vector<double> sustained(libs.size(), 0);
  double lin_flops = 0;
  for (size_t i = 0; i < n_linear; ++i) lin_flops += shapes[i].flops();
  for (size_t k = 0; k < libs.size(); ++k) {
    double t = 0;
    for (size_t i = 0; i < n_linear; ++i) t += res[i][k].median;
    sustained[k] = lin_flops / t * 1e-9;
  }
  for (size_t k = 0; k < libs.size(); ++k)
    std::printf("  %-12s %7.1f GFLOP/s  ratio %.2f\n", libs[k]->name.c_str(), sustained[k],
                have_openblas ? sustained[k] / sustained[0] : 0.0);
  std::printf("attention, all 4 products of one step's per-head loop (scores + context, x384):\n");
  for (size_t k = 0; k < libs.size(); ++k) {
    double ts = res[n_linear][k].median + res[n_linear + 1][k].median;
    double tp = res[n_linear + 2][k].median + res[n_linear + 3][k].median;
    double f = shapes[n_linear].flops() + shapes[n_linear + 1].flops();
    std::printf("  %-12s serial %6.1f GFLOP/s, parfor %6.1f GFLOP/s, parfor/serial %.2f\n",
                libs[k]->name.c_str(), f / ts * 1e-9, f / tp * 1e-9, ts / tp);
  }

  size_t best = size_t(std::max_element(sustained.begin(), sustained.end()) - sustained.begin());
  if (!o.quick && o.threads > 1) {
    std::printf("\n1 vs %d threads, %s (interleaved, median of %d):\n", o.threads,
                libs[best]->name.c_str(), o.reps);
    std::printf("%-20s %-20s %8s %8s %8s %6s\n", "shape", "MxNxK", "1t GF/s", "Nt GF/s", "speedup", "other");
    double t1sum = 0, tnsum = 0;
    for (size_t i = 0; i < n_linear; ++i) {
      const Shape& s = shapes[i];
      Buffers b = make_buffers(s, rng);
      double other = 0;
      auto st = measure_quiet(s, {{libs[best], 1}, {libs[best], o.threads}}, b, o, rng, &other);
      t1sum += st[0].median;
      tnsum += st[1].median;
      std::printf("%-20s %-20s %8.1f %8.1f %8.2f %5.0f%%%s\n", (s.layer + " " + s.op).c_str(),
                  dims(s).c_str(), st[0].gflops(s.flops()), st[1].gflops(s.flops()),
                  st[0].median / st[1].median, 100 * other, other >= 0.10 ? " noisy" : "");
    }
    std::printf("%-41s %8.1f %8.1f %8.2f\n", "sustained (all 12)", lin_flops / t1sum * 1e-9,
                lin_flops / tnsum * 1e-9, t1sum / tnsum);
  }

  // Noise report: CPU time used by *other* processes (all busy time minus our own) and
  // hypervisor steal, as shares of the machine's capacity over the run. Near 0 = the
  // numbers above are clean; tens of percent = re-run on a quieter machine.
  const CpuStat cs1 = cpu_stat();
  const double own = own_cpu_seconds() - own0;
  const double tick = double(sysconf(_SC_CLK_TCK));
  const double total_s = double(cs1.total - cs0.total) / tick;
  const double busy_s = double(cs1.busy - cs0.busy) / tick;
  const double steal_s = double(cs1.steal - cs0.steal) / tick;
  const double other = total_s > 0 ? std::max(0.0, busy_s - steal_s - own) / total_s : 0.0;
  std::printf("\n# loadavg at end: %s; other processes used %.1f%% and hypervisor steal %.1f%% "
              "of the machine during the run; wall %.1f s\n",
              loadavg().c_str(), 100.0 * other, total_s > 0 ? 100.0 * steal_s / total_s : 0.0,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count());
  return 0;
}
