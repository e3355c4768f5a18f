// Matrix products (kernels/ops.h) on the GPU through cuBLASLt: gemm, the Linear and Conv1D
// layers and the fused Linear + activation forward.
//
// Row-major to cuBLAS's column-major: a row-major X[r, c] with leading dimension ld is the
// column-major X^T, so C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T with m = N,
// n = M: B is cuBLAS's first operand, A its second, and no data moves.
//
// Precision: fp32 products use CUBLAS_COMPUTE_32F (exact fp32, no TF32) unless
// kernels::set_tf32(true) asks for CUBLAS_COMPUTE_32F_FAST_TF32 (HF's `tf32`). Under bf16 /
// fp16 products (kernels/matmul_precision.h) the operands are rounded to that type (nearest
// even, as the CPU's) into packed scratch on the stream, and cuBLASLt multiplies them on the
// tensor cores with fp32 accumulation and an fp32 C (CUDA_R_16BF / CUDA_R_16F A and B,
// CUBLAS_COMPUTE_32F): the CPU's recipe, summed in another order. Determinism:
// cuBLASLt gives the same bits for the same algorithm, shape and GPU; the algorithm is chosen
// once per (shape, layout, epilogue, alignment) and cached, so every later call of that shape
// runs the same one.
//
// Epilogues: the bias is added by cuBLASLt's BIAS epilogue; GeluTanh's Linear by GELU_AUX_BIAS
// (cuBLASLt's GELU is the tanh form, so it is the same function; erf GELU never uses it), which
// also writes the pre-activation that the backward needs. Bias gradients are column sums in a
// fixed order (common.cuh) added into db, as the contract wants (+=; BGRADB would overwrite).
#include <cublasLt.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cublaslt_api.cuh"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/matmul_precision.h"

namespace strata::kernels::cuda {

namespace {

#define STRATA_CUBLAS_CHECK(call)                                                                      \
  do {                                                                                                 \
    const cublasStatus_t strata_st_ = (call);                                                          \
    if (strata_st_ != CUBLAS_STATUS_SUCCESS)                                                           \
      throw_cuda_error(#call, "cublasStatus", std::to_string(static_cast<int>(strata_st_)).c_str(), __FILE__, \
                       __LINE__);                                                                      \
  } while (0)

constexpr size_t kWorkspaceBytes = 32u << 20;  // what NVIDIA advises for Hopper

enum class Epilogue : int { None = 0, Bias = 1, GeluAux = 2, GeluAuxBias = 3 };

struct Key {
  bool ta, tb;  // cuBLAS's operations: ta on its A (our B), tb on its B (our A)
  int m, n, k, lda, ldb, ldc;
  Epilogue epilogue;
  bool tf32;
  MatmulPrecision operands;  // the type of A and B
  int align_a, align_b, align_c, align_bias, align_aux;
  bool operator==(const Key& o) const { return std::memcmp(this, &o, sizeof(Key)) == 0; }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    const auto* p = reinterpret_cast<const unsigned char*>(&k);
    size_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof(Key); ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h;
  }
};

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool found = false;
};

struct Lt {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  std::mutex mutex;
  std::unordered_map<Key, Plan, KeyHash> plans;
};

Lt& lt() {
  static Lt* state = [] {
    auto* s = new Lt;  // lives for the process: destroying it at exit races the CUDA runtime's teardown
    STRATA_CUBLAS_CHECK(cublaslt_api().Create(&s->handle));
    STRATA_CUDA_CHECK(cudaMalloc(&s->workspace, kWorkspaceBytes));
    return s;
  }();
  return *state;
}

bool g_gelu_epilogue = true;

int alignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  int a = 256;
  while (a > 4 && v % a != 0) a /= 2;
  return a;
}

// Zeroing key's padding bytes first, so memcmp and the hash see only the fields.
Key make_key() {
  Key k;
  std::memset(&k, 0, sizeof k);
  return k;
}

Plan make_plan(const Key& key, const float* bias, const float* aux) {
  Plan p;
  const cublasComputeType_t compute = key.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  STRATA_CUBLAS_CHECK(cublaslt_api().MatmulDescCreate(&p.desc, compute, CUDA_R_32F));
  const cublasOperation_t opa = key.ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = key.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  STRATA_CUBLAS_CHECK(cublaslt_api().MatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
  STRATA_CUBLAS_CHECK(cublaslt_api().MatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  switch (key.epilogue) {
    case Epilogue::None: break;
    case Epilogue::Bias: epi = CUBLASLT_EPILOGUE_BIAS; break;
    case Epilogue::GeluAux: epi = CUBLASLT_EPILOGUE_GELU_AUX; break;
    case Epilogue::GeluAuxBias: epi = CUBLASLT_EPILOGUE_GELU_AUX_BIAS; break;
  }
  STRATA_CUBLAS_CHECK(cublaslt_api().MatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  if (bias) {
    const cudaDataType_t bt = CUDA_R_32F;
    STRATA_CUBLAS_CHECK(cublaslt_api().MatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    STRATA_CUBLAS_CHECK(cublaslt_api().MatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  }
  if (aux) {
    const int64_t ld = key.m;  // the pre-activation [n rows of ours, m columns], packed
    STRATA_CUBLAS_CHECK(cublaslt_api().MatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux));
    STRATA_CUBLAS_CHECK(cublaslt_api().MatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld));
  }
  // Stored column-major shapes: cuBLAS's A (our B) is m x k, or k x m when transposed; its
  // B (our A) is k x n, or n x k. key.ta / key.tb are cuBLAS's operations.
  const cudaDataType_t operands = key.operands == MatmulPrecision::Bf16   ? CUDA_R_16BF
                                  : key.operands == MatmulPrecision::Fp16 ? CUDA_R_16F
                                                                          : CUDA_R_32F;
  STRATA_CUBLAS_CHECK(cublaslt_api().MatrixLayoutCreate(&p.a, operands, key.ta ? key.k : key.m,
                                                 key.ta ? key.m : key.k, key.ldb));
  STRATA_CUBLAS_CHECK(cublaslt_api().MatrixLayoutCreate(&p.b, operands, key.tb ? key.n : key.k,
                                                 key.tb ? key.k : key.n, key.lda));
  STRATA_CUBLAS_CHECK(cublaslt_api().MatrixLayoutCreate(&p.c, CUDA_R_32F, key.m, key.n, key.ldc));

  cublasLtMatmulPreference_t pref = nullptr;
  STRATA_CUBLAS_CHECK(cublaslt_api().MatmulPreferenceCreate(&pref));
  const size_t ws = kWorkspaceBytes;
  STRATA_CUBLAS_CHECK(cublaslt_api().MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  const uint32_t aa = key.align_b, ab = key.align_a, ac = key.align_c;  // cuBLAS's A is our B
  STRATA_CUBLAS_CHECK(cublaslt_api().MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aa, sizeof aa));
  STRATA_CUBLAS_CHECK(cublaslt_api().MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ab, sizeof ab));
  STRATA_CUBLAS_CHECK(cublaslt_api().MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ac, sizeof ac));
  STRATA_CUBLAS_CHECK(cublaslt_api().MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ac, sizeof ac));
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  const cublasStatus_t st =
      cublaslt_api().MatmulAlgoGetHeuristic(lt().handle, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &returned);
  cublaslt_api().MatmulPreferenceDestroy(pref);
  if (st == CUBLAS_STATUS_SUCCESS && returned > 0) {
    p.algo = result.algo;
    p.found = true;
  }
  return p;
}

// rows x cols of src (row stride ld) rounded to bf16 / fp16 into dst, packed.
__global__ void to_half_rows_kernel(bool bf16, const float* src, int ld, int rows, int cols, uint16_t* dst) {
  const size_t total = static_cast<size_t>(rows) * cols;
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[e] = to_half_bits(bf16, src[(e / cols) * ld + e % cols]);
}

// The stored operand (rows x cols, stride ld) rounded into `half`'s packed 16-bit values (the
// scratch of a product, freed after it on the stream): returns their stride.
int to_half_operand(MatmulPrecision p, const float* src, int ld, int rows, int cols, const Scratch& half) {
  const size_t total = static_cast<size_t>(rows) * cols;
  if (total > 0) {
    to_half_rows_kernel<<<elementwise_blocks(total, 256), 256, 0, stream()>>>(p == MatmulPrecision::Bf16, src, ld,
                                                                              rows, cols, half.as<uint16_t>());
    STRATA_CUDA_LAUNCH_CHECK();
  }
  return std::max(cols, 1);
}

// C = alpha op(A) op(B) + beta C (row-major), with an optional epilogue; false when cuBLASLt
// has no algorithm for the epilogue (the caller then does without it).
bool lt_gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
             float beta, float* C, int ldc, Epilogue epilogue, const float* bias, float* aux) {
  const MatmulPrecision precision = matmul_precision();
  const bool half = precision != MatmulPrecision::Fp32;
  // op(A) is stored [M, K] ([K, M] transposed), op(B) [K, N] ([N, K]).
  const Scratch half_a(half ? static_cast<size_t>(M) * K * sizeof(uint16_t) : 0);
  const Scratch half_b(half ? static_cast<size_t>(K) * N * sizeof(uint16_t) : 0);
  const void* a_op = A;
  const void* b_op = B;
  if (half) {
    lda = to_half_operand(precision, A, lda, ta ? K : M, ta ? M : K, half_a);
    ldb = to_half_operand(precision, B, ldb, tb ? N : K, tb ? K : N, half_b);
    a_op = half_a.as<uint16_t>();
    b_op = half_b.as<uint16_t>();
  }
  Key key = make_key();
  key.ta = tb;  // cuBLAS's A is our B
  key.tb = ta;
  key.m = N;
  key.n = M;
  key.k = K;
  key.lda = lda;
  key.ldb = ldb;
  key.ldc = ldc;
  key.epilogue = epilogue;
  key.tf32 = tf32() && precision == MatmulPrecision::Fp32;
  key.operands = precision;
  key.align_a = alignment(a_op);
  key.align_b = alignment(b_op);
  key.align_c = alignment(C);
  key.align_bias = bias ? alignment(bias) : 0;
  key.align_aux = aux ? alignment(aux) : 0;
  // The key's ta/tb are cuBLAS's; make_plan's layouts read them that way.
  Lt& s = lt();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.plans.find(key);
  if (it == s.plans.end()) it = s.plans.emplace(key, make_plan(key, bias, aux)).first;
  Plan& p = it->second;
  if (!p.found) {
    if (epilogue != Epilogue::None) return false;
    throw std::runtime_error(std::string("kernels::gemm: cuBLASLt has no ") + precision_name(precision) +
                             " algorithm for M=" + std::to_string(M) +
                             " N=" + std::to_string(N) + " K=" + std::to_string(K) + " lda=" + std::to_string(lda) +
                             " ldb=" + std::to_string(ldb) + " ldc=" + std::to_string(ldc));
  }
  if (bias)
    STRATA_CUBLAS_CHECK(cublaslt_api().MatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  if (aux)
    STRATA_CUBLAS_CHECK(cublaslt_api().MatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux));
  STRATA_CUBLAS_CHECK(cublaslt_api().Matmul(s.handle, p.desc, &alpha, b_op, p.a, a_op, p.b, &beta, C, p.c, C, p.c, &p.algo,
                                     s.workspace, kWorkspaceBytes, stream()));
  return true;
}

__global__ void scale_matrix_kernel(float* C, int M, int N, int ldc, float beta) {
  const size_t total = static_cast<size_t>(M) * N;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float* c = C + (i / N) * ldc + i % N;
    *c = beta == 0.0f ? 0.0f : beta * *c;
  }
}

__global__ void broadcast_rows_kernel(const float* b, float* y, int N, int out) {
  const size_t total = static_cast<size_t>(N) * out;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    y[i] = b[i % out];
}

void plain_gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                float beta, float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {  // C = beta C: cuBLASLt wants k >= 1
    scale_matrix_kernel<<<elementwise_blocks(static_cast<size_t>(M) * N, 256), 256, 0, stream()>>>(C, M, N, ldc, beta);
    STRATA_CUDA_LAUNCH_CHECK();
    return;
  }
  lt_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, Epilogue::None, nullptr, nullptr);
}

// y[N, out] = x op(W) + b, op(W) = W^T (Linear, W [out, in]) or W (Conv1D, W [in, out]).
void affine_forward(bool w_transposed, const float* x, const float* W, const float* b, float* y, int N, int in,
                    int out) {
  if (N <= 0 || out <= 0) return;
  const int ldw = w_transposed ? in : out;
  if (b && in > 0 && alignment(b) >= 16 &&
      lt_gemm(false, w_transposed, N, out, in, 1.0f, x, in, W, ldw, 0.0f, y, out, Epilogue::Bias, b, nullptr))
    return;
  if (b) {  // the CPU's way: y = b, then y += x op(W)
    broadcast_rows_kernel<<<elementwise_blocks(static_cast<size_t>(N) * out, 256), 256, 0, stream()>>>(b, y, N, out);
    STRATA_CUDA_LAUNCH_CHECK();
  }
  plain_gemm(false, w_transposed, N, out, in, 1.0f, x, in, W, ldw, b ? 1.0f : 0.0f, y, out);
}

struct ColumnTerm {
  const float* m;
  int C;
  __device__ float operator()(int n, int c) const { return m[static_cast<size_t>(n) * C + c]; }
};

}  // namespace

void set_gelu_epilogue(bool on) { g_gelu_epilogue = on; }

void gemm(bool trans_a, bool trans_b, int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb, T beta,
          T* C, int ldc) {
  plain_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void linear_forward(const T* x, const T* W, const T* b, T* y, int N, int in, int out) {
  affine_forward(true, x, W, b, y, N, in, out);
}

void linear_backward(const T* x, const T* W, const T* dy, T* dx, T* dW, T* db, int N, int in, int out) {
  plain_gemm(true, false, out, in, N, 1.0f, dy, out, x, in, 1.0f, dW, in);  // before dx: dx may alias x
  if (dx) plain_gemm(false, false, N, in, out, 1.0f, dy, out, W, in, 0.0f, dx, in);
  if (db) add_column_sums(ColumnTerm{dy, out}, N, out, db);
}

void conv1d_forward(const T* x, const T* W, const T* b, T* y, int N, int in, int out) {
  affine_forward(false, x, W, b, y, N, in, out);
}

void conv1d_backward(const T* x, const T* W, const T* dy, T* dx, T* dW, T* db, int N, int in, int out) {
  plain_gemm(true, false, in, out, N, 1.0f, x, in, dy, out, 1.0f, dW, out);  // before dx: dx may alias x
  if (dx) plain_gemm(false, true, N, in, out, 1.0f, dy, out, W, out, 0.0f, dx, in);
  if (db) add_column_sums(ColumnTerm{dy, out}, N, out, db);
}

void linear_act_forward(Activation a, const T* x, const T* W, const T* b, T* pre, T* y, int N, int in, int out) {
  if (N <= 0 || out <= 0) return;
  // cuBLASLt's GELU is the tanh form: GeluTanh only. The auxiliary output's leading dimension
  // must be a multiple of 8.
  if (a == Activation::GeluTanh && g_gelu_epilogue && in > 0 && out % 8 == 0 && alignment(pre) >= 16 &&
      (!b || alignment(b) >= 16) &&
      lt_gemm(false, true, N, out, in, 1.0f, x, in, W, in, 0.0f, y, out, b ? Epilogue::GeluAuxBias : Epilogue::GeluAux,
              b, pre))
    return;
  linear_forward(x, W, b, pre, N, in, out);
  activation_forward(a, pre, y, static_cast<size_t>(N) * out);
}

}  // namespace strata::kernels::cuda
