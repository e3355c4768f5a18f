// Does CUDA code built on the developers' machines run on the lent GPU machine? Built by
// scripts/pack_gpu_bundle.sh (nvcc, sm_90), run first by scripts/gpu_check.sh: one kernel over
// a poisoned buffer (every element must be written) and one cuBLAS SGEMM (the machine's own
// cuBLAS, found through the bundle's RUNPATH) against a float64 product on the host.
// Exit 0: both right; 77: no GPU (CTest's "skipped"); 1: anything else.
#include <cublas_v2.h>
#include <cmath>
#include <cstdio>
#include <vector>

#define CHECK(x) do { auto e_ = (x); if (e_ != 0) { std::printf("FAIL %s: error %d\n", #x, (int)e_); return 1; } } while (0)

__global__ void axpb(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 3.0f * x[i] + 1.0f;
}

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) { std::printf("no CUDA device: skipped\n"); return 77; }
  cudaDeviceProp p;
  CHECK(cudaGetDeviceProperties(&p, 0));
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::printf("%s, compute capability %d.%d, %d SMs, %.0f MiB; driver CUDA %d, runtime %d\n", p.name, p.major,
              p.minor, p.multiProcessorCount, p.totalGlobalMem / 1048576.0, driver, runtime);

  const int n = (1 << 20) + 7, m = 67, k = 129, nn = 33;  // odd sizes on purpose
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = float(i % 1000) * 0.5f;
  float *dx, *dy;
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dy, 0xff, n * sizeof(float)));  // NaN: an unwritten element fails
  axpb<<<(n + 255) / 256, 256>>>(dx, dy, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < n; ++i) bad += !(y[i] == 3.0f * x[i] + 1.0f);
  std::printf("kernel (sm_%d%d code): %d of %d elements wrong\n", p.major, p.minor, bad, n);

  std::vector<float> a(m * k), b(k * nn), c(m * nn);
  for (int i = 0; i < m * k; ++i) a[i] = std::sin(0.37f * i);
  for (int i = 0; i < k * nn; ++i) b[i] = std::cos(0.11f * i);
  float *da, *db, *dc;
  CHECK(cudaMalloc(&da, a.size() * 4));
  CHECK(cudaMalloc(&db, b.size() * 4));
  CHECK(cudaMalloc(&dc, c.size() * 4));
  CHECK(cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice));
  cublasHandle_t h;
  CHECK(cublasCreate(&h));
  const float one = 1, zero = 0;
  // Column-major: C (m x nn) = A (m x k) * B (k x nn); default math mode, no TF32.
  CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, nn, k, &one, da, m, db, k, &zero, dc, m));
  CHECK(cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost));
  double err = 0, scale = 0;
  for (int j = 0; j < nn; ++j)
    for (int i = 0; i < m; ++i) {
      double r = 0;
      for (int l = 0; l < k; ++l) r += double(a[i + l * m]) * b[l + j * k];
      err = std::fmax(err, std::fabs(r - c[i + j * m]));
      scale = std::fmax(scale, std::fabs(r));
    }
  const bool gemm_ok = err <= 1e-5 * scale;
  std::printf("cublasSgemm %dx%dx%d: max error %.3g relative to the largest value %.3g\n", m, nn, k, err / scale, scale);
  cublasDestroy(h);
  std::printf("%s\n", bad == 0 && gemm_ok ? "ok" : "FAIL");
  return bad == 0 && gemm_ok ? 0 : 1;
}
