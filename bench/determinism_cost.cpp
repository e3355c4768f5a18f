// What the full-determinism guarantee (the same bits for any thread count) costs in the matrix
// products, which are most of a training step. strata's kernels::gemm cuts C into tiles by
// shape and runs each tile as a single-threaded oneDNN call (src/kernels/cpu/linear.cpp). The
// fastest alternative is oneDNN's own threading: one dnnl_sgemm call on all threads, which
// splits the product by thread count. For each product of a BERT-base layer at B32 T128 and a
// GPT-2 124M layer plus its LM head at B4 T256 (the bench_train_step shapes), both are timed
// alternately (median of --reps after a warm-up), and oneDNN's threaded result is compared bit
// for bit with its one-thread result and with a repeat at the same thread count.
//
//   bench_determinism_cost [--threads 2] [--reps 5]
//
// Results: docs/numerics.md, "Determinism".
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "kernels/ops.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Product {
  const char* model;
  const char* name;
  bool ta, tb;
  int m, n, k;
};

// y = x W^T (fwd), dx = dy W (bwd-data), dW = dy^T x (bwd-weight) per Linear; GPT-2's Conv1D
// stores W as [in, out], so its forward is x W and its weight gradient x^T dy.
constexpr Product kProducts[] = {
    {"bert", "qkv fwd", false, true, 4096, 2304, 768},
    {"bert", "qkv bwd-data", false, false, 4096, 768, 2304},
    {"bert", "qkv bwd-weight", true, false, 2304, 768, 4096},
    {"bert", "attn-out fwd", false, true, 4096, 768, 768},
    {"bert", "attn-out bwd-data", false, false, 4096, 768, 768},
    {"bert", "attn-out bwd-weight", true, false, 768, 768, 4096},
    {"bert", "ffn-up fwd", false, true, 4096, 3072, 768},
    {"bert", "ffn-up bwd-data", false, false, 4096, 768, 3072},
    {"bert", "ffn-up bwd-weight", true, false, 3072, 768, 4096},
    {"bert", "ffn-down fwd", false, true, 4096, 768, 3072},
    {"bert", "ffn-down bwd-data", false, false, 4096, 3072, 768},
    {"bert", "ffn-down bwd-weight", true, false, 768, 3072, 4096},
    {"gpt2", "c_attn fwd", false, false, 1024, 2304, 768},
    {"gpt2", "c_attn bwd-data", false, true, 1024, 768, 2304},
    {"gpt2", "c_attn bwd-weight", true, false, 768, 2304, 1024},
    {"gpt2", "c_proj fwd", false, false, 1024, 768, 768},
    {"gpt2", "c_proj bwd-data", false, true, 1024, 768, 768},
    {"gpt2", "c_proj bwd-weight", true, false, 768, 768, 1024},
    {"gpt2", "c_fc fwd", false, false, 1024, 3072, 768},
    {"gpt2", "c_fc bwd-data", false, true, 1024, 768, 3072},
    {"gpt2", "c_fc bwd-weight", true, false, 768, 3072, 1024},
    {"gpt2", "mlp.c_proj fwd", false, false, 1024, 768, 3072},
    {"gpt2", "mlp.c_proj bwd-data", false, true, 1024, 3072, 768},
    {"gpt2", "mlp.c_proj bwd-weight", true, false, 3072, 768, 1024},
    {"gpt2", "lm-head fwd", false, true, 1024, 50257, 768},
    {"gpt2", "lm-head bwd-data", false, false, 1024, 768, 50257},
    {"gpt2", "lm-head bwd-weight", true, false, 50257, 768, 1024},
};

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// oneDNN on `threads` threads: called outside any parallel region, it threads the product itself.
void onednn_threaded(const Product& p, int threads, const float* A, const float* B, float* C) {
  omp_set_num_threads(threads);
  const int lda = p.ta ? p.m : p.k, ldb = p.tb ? p.k : p.n;
  if (dnnl_sgemm(p.ta ? 'T' : 'N', p.tb ? 'T' : 'N', p.m, p.n, p.k, 1.0f, A, lda, B, ldb, 0.0f, C, p.n) !=
      dnnl_success) {
    std::fprintf(stderr, "dnnl_sgemm failed on %s %s\n", p.model, p.name);
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, reps = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--threads" || a == "--reps") && i + 1 < argc) {
      (a == "--threads" ? threads : reps) = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--threads N] [--reps N]\n", argv[0]);
      return 2;
    }
  }
  if (threads < 2 || reps < 1) {
    std::fprintf(stderr, "--threads must be at least 2 (the comparison is across thread counts), --reps positive\n");
    return 2;
  }
  std::printf("# machine: %s; %d threads, median of %d after a warm-up, both methods alternated\n",
              strata::bench::machine().c_str(), threads, reps);
  std::printf("%-6s %-22s %-18s %10s %10s %7s %14s %14s\n", "model", "product", "M x N x K", "tiles", "oneDNN-thr",
              "tiles/", "oneDNN 1 vs N", "oneDNN repeat");
  std::printf("%-6s %-22s %-18s %10s %10s %7s %14s %14s\n", "", "", "", "GFLOP/s", "GFLOP/s", "thr", "same bits",
              "same bits");
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  struct Total {
    double flops = 0, t_tiles = 0, t_threaded = 0;
  } totals[2];
  for (const Product& p : kProducts) {
    std::vector<float> A(static_cast<size_t>(p.m) * p.k), B(static_cast<size_t>(p.k) * p.n);
    for (float& x : A) x = dist(rng);
    for (float& x : B) x = dist(rng);
    const size_t nc = static_cast<size_t>(p.m) * p.n;
    std::vector<float> C_tiles(nc), C_thr(nc), C_thr2(nc), C_one(nc);
    const int lda = p.ta ? p.m : p.k, ldb = p.tb ? p.k : p.n;
    std::vector<double> t_tiles, t_thr;
    for (int r = 0; r <= reps; ++r) {
      strata::kernels::set_num_threads(threads);
      auto t0 = Clock::now();
      strata::kernels::gemm<float>(p.ta, p.tb, p.m, p.n, p.k, 1.0f, A.data(), lda, B.data(), ldb, 0.0f,
                                   C_tiles.data(), p.n);
      if (r > 0) t_tiles.push_back(seconds_since(t0));
      t0 = Clock::now();
      onednn_threaded(p, threads, A.data(), B.data(), r == reps ? C_thr2.data() : C_thr.data());
      if (r > 0) t_thr.push_back(seconds_since(t0));
    }
    onednn_threaded(p, 1, A.data(), B.data(), C_one.data());
    const bool same_1_n = std::memcmp(C_one.data(), C_thr.data(), nc * sizeof(float)) == 0;
    const bool same_repeat = std::memcmp(C_thr.data(), C_thr2.data(), nc * sizeof(float)) == 0;
    const double flops = 2.0 * p.m * p.n * p.k, tt = strata::bench::median(t_tiles),
                 tn = strata::bench::median(t_thr);
    Total& tot = totals[std::strcmp(p.model, "bert") == 0 ? 0 : 1];
    tot.flops += flops, tot.t_tiles += tt, tot.t_threaded += tn;
    char shape[32];
    std::snprintf(shape, sizeof shape, "%dx%dx%d%s", p.m, p.n, p.k, p.ta ? " tA" : p.tb ? " tB" : "");
    std::printf("%-6s %-22s %-18s %10.1f %10.1f %7.2f %14s %14s\n", p.model, p.name, shape, flops / tt / 1e9,
                flops / tn / 1e9, tn / tt, same_1_n ? "yes" : "no", same_repeat ? "yes" : "no");
    std::fflush(stdout);
  }
  for (int i = 0; i < 2; ++i)
    std::printf("%s, all products (flop-weighted): tiles %.1f GFLOP/s, oneDNN threaded %.1f GFLOP/s, time ratio "
                "threaded/tiles %.3f\n",
                i == 0 ? "bert-base B32 T128" : "gpt2 B4 T256", totals[i].flops / totals[i].t_tiles / 1e9,
                totals[i].flops / totals[i].t_threaded / 1e9, totals[i].t_threaded / totals[i].t_tiles);
  return 0;
}
