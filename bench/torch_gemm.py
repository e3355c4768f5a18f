"""torch_gemm.py -- PyTorch's fp32 matrix-product speed on the shapes of strata's GEMM ceiling.

    $(scripts/bench_python.sh) bench/torch_gemm.py [--threads 2] [--reps 10]
    capped like the AVX2 benchmarks:
    ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 $(scripts/bench_python.sh) bench/torch_gemm.py

bench_train_step's "GEMM ceiling" is the best of five BERT-base products at 4096 tokens
(M x N x K): fwd 4096x3072x768 and 4096x768x3072 and 4096x2304x768 (y = x W^T, as nn.Linear),
bwd-data 4096x768x3072 (dx = dy W), bwd-weight 3072x768x4096 (dW = dy^T x). This times the
same products as PyTorch runs them in a training step (F.linear, mm, mm of a transposed view),
so the two ceilings can be set side by side: when strata's step runs near its own ceiling and
PyTorch's GEMM is faster than strata's, the gap is the GEMM library's. Prints GFLOP/s per shape
(median of --reps) and the best; --json writes them.
"""
import argparse
import json
import statistics
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    shapes = [("fwd", 4096, 3072, 768), ("fwd", 4096, 768, 3072), ("bwd-data", 4096, 768, 3072),
              ("bwd-weight", 3072, 768, 4096), ("fwd", 4096, 2304, 768)]
    rows = []
    for kind, m, n, k in shapes:
        if kind == "fwd":  # y[M,N] = x[M,K] W[N,K]^T
            x, w = torch.randn(m, k), torch.randn(n, k)
            run = lambda: F.linear(x, w)
        elif kind == "bwd-data":  # dx[M,N] = dy[M,K] W[K,N]
            dy, w = torch.randn(m, k), torch.randn(k, n)
            run = lambda: torch.mm(dy, w)
        else:  # dW[M,N] = dy[K,M]^T x[K,N]
            dy, x = torch.randn(k, m), torch.randn(k, n)
            run = lambda: torch.mm(dy.t(), x)
        run()
        times = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        gflops = 2 * m * n * k / statistics.median(times) / 1e9
        rows.append({"kind": kind, "m": m, "n": n, "k": k, "gflops": gflops})
        print(f"  {kind:10s} {m}x{n}x{k:<6d} {gflops:7.1f} GFLOP/s")
    best = max(r["gflops"] for r in rows)
    print(f"torch {torch.__version__}, ATen CPU capability {torch.backends.cpu.get_cpu_capability()}, "
          f"{torch.get_num_threads()} threads: best {best:.1f} GFLOP/s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                       "threads": torch.get_num_threads(), "shapes": rows, "best_gflops": best}, f, indent=1)


if __name__ == "__main__":
    main()
