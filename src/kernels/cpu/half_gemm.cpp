// Mixed-precision products (kernels/matmul_precision.h). Each operand is rounded once per
// product into a thread-local buffer, packed (row stride = its stored width): fp32 values for
// the emulated path, bf16 for oneDNN's matmul. Both then run under the fp32 threading policy
// (gemm_tiles.h): whole where the library threads it, else in shape-fixed tiles.
//
// Measured (oneDNN 2.6.3, docs/benchmarks.md): on a 2-core Zen 4 the bf16 products run at 1.8x
// the fp32 sgemm (402 vs 220 GFLOP/s, conversions included); on a 2-core Xeon without AMX at
// 0.53x (128 vs 242), vdpbf16ps issuing at half the rate of fp32 FMAs on that core.
#include "kernels/cpu/half_gemm.h"

#include <immintrin.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/gemm_tiles.h"
#include "kernels/cpu/isa.h"
#include "kernels/matmul_precision.h"
#include "tensor/dtype.h"
#include "util/error.h"

namespace strata::kernels {

namespace avx512 {
namespace {
// One row of n floats to bf16 with the CPU's own conversion (vcvtne2ps2bf16: round to nearest
// even, as float_to_bf16, except that it reads subnormal inputs as zero: below 1.2e-38, where
// bf16 products do not reach). Only the native path calls it, which needs avx512_bf16; in the
// avx512 namespace, where wide registers belong (tests/check_isa_code.sh). Scalar conversion
// cost a third of a bf16 product's time (3 conversions per 2 K flops at K = 768).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void row_to_bf16(const float* s, int n, uint16_t* d) {
  int c = 0;
  for (; c + 32 <= n; c += 32) {
    const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(s + c + 16), _mm512_loadu_ps(s + c));
    _mm512_storeu_si512(d + c, reinterpret_cast<__m512i>(v));
  }
  for (; c < n; c += 16) {
    const __mmask16 m = n - c >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (n - c)) - 1);
    const __m256bh v = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, s + c));
    _mm256_mask_storeu_epi16(d + c, m, reinterpret_cast<__m256i>(v));
  }
}
}  // namespace
}  // namespace avx512

namespace {

std::atomic<MatmulPrecision> g_precision{MatmulPrecision::Fp32};
std::atomic<MatmulPath> g_path{MatmulPath::Emulated};
std::atomic<bool> g_tf32{false};  // read by the GPU's products only (kernels/cuda/gemm.cu)

// Rows x cols of src (row stride ld) into dst, packed, each row converted by
// convert_row(src row, cols, dst row). Threaded over rows where no team runs yet.
template <typename E, typename ConvertRow>
void pack(const float* src, int ld, int rows, int cols, E* dst, ConvertRow convert_row) {
  auto row = [&](int r) { convert_row(src + static_cast<size_t>(r) * ld, cols, dst + static_cast<size_t>(r) * cols); };
  if (omp_get_level() > 0 || static_cast<size_t>(rows) * cols < (size_t{1} << 16)) {
    for (int r = 0; r < rows; ++r) row(r);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int r = 0; r < rows; ++r) row(r);
}

float round_bf16(float x) { return bf16_to_float(float_to_bf16(x)); }
float round_fp16(float x) { return half_to_float(float_to_half(x)); }
float keep_fp32(float x) { return x; }
using Rounding = float (*)(float);
Rounding rounding(MatmulPrecision p) {
  return p == MatmulPrecision::Bf16 ? round_bf16 : p == MatmulPrecision::Fp16 ? round_fp16 : keep_fp32;
}

// The stored shape of op(X) = X^t? [rows, cols]: op(A) is M x K, op(B) is K x N.
struct Stored {
  int rows, cols;
};
Stored stored(bool transposed, int op_rows, int op_cols) {
  return transposed ? Stored{op_cols, op_rows} : Stored{op_rows, op_cols};
}

// ---- the native path: oneDNN's bf16 matmul -----------------------------------------------

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

struct MatmulKey {
  bool ta, tb;
  int M, N, K, lda, ldb, ldc;
  float alpha, beta;
  bool operator==(const MatmulKey&) const = default;
};
struct MatmulKeyHash {
  size_t operator()(const MatmulKey& k) const {
    size_t h = std::hash<int>()(k.M);
    for (const size_t v : {std::hash<int>()(k.N), std::hash<int>()(k.K), std::hash<int>()(k.lda),
                           std::hash<int>()(k.ldb), std::hash<int>()(k.ldc),
                           std::hash<float>()(k.alpha), std::hash<float>()(k.beta),
                           static_cast<size_t>(k.ta) * 2 + k.tb})
      h = h * 1000003u ^ v;
    return h;
  }
};
struct BoundMatmul {
  dnnl::matmul primitive;
  dnnl::memory::desc a, b, c;
};

// C[M,N] (row stride ldc) = alpha op(A) op(B) + beta C, A and B bf16 (row strides lda, ldb),
// run on the calling thread inside a team, else threaded by oneDNN. Primitives are cached per
// thread (the attention kernel calls this from every thread of its team) and per shape: a
// training run has a few dozen.
void bf16_matmul(bool ta, bool tb, int M, int N, int K, float alpha, const uint16_t* A, int lda, const uint16_t* B,
                 int ldb, float beta, float* C, int ldc) {
  using dims = dnnl::memory::dims;
  using dt = dnnl::memory::data_type;
  thread_local std::unordered_map<MatmulKey, BoundMatmul, MatmulKeyHash> cache;
  thread_local dnnl::stream stream(cpu_engine());
  const MatmulKey key{ta, tb, M, N, K, lda, ldb, ldc, alpha, beta};
  auto it = cache.find(key);
  if (it == cache.end()) {
    // A is stored [M, K] (transposed: [K, M]), B [K, N] (transposed: [N, K]).
    const dnnl::memory::desc a({M, K}, dt::bf16, ta ? dims{1, lda} : dims{lda, 1});
    const dnnl::memory::desc b({K, N}, dt::bf16, tb ? dims{1, ldb} : dims{ldb, 1});
    const dnnl::memory::desc c({M, N}, dt::f32, dims{ldc, 1});
    dnnl::primitive_attr attr;
    if (alpha != 1.f) attr.set_output_scales(0, {alpha});
    if (beta != 0.f) {
      dnnl::post_ops sum;
      sum.append_sum(beta);
      attr.set_post_ops(sum);
    }
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, cpu_engine());
    it = cache.emplace(key, BoundMatmul{dnnl::matmul(pd), a, b, c}).first;
  }
  const BoundMatmul& m = it->second;
  dnnl::memory am(m.a, cpu_engine(), const_cast<uint16_t*>(A));
  dnnl::memory bm(m.b, cpu_engine(), const_cast<uint16_t*>(B));
  dnnl::memory cm(m.c, cpu_engine(), C);
  m.primitive.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  stream.wait();
}

bool onednn_has_bf16_dot() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
}

std::string onednn_isa_name() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx2: return "avx2";
    default: return "below avx2";
  }
}

}  // namespace

const char* precision_name(MatmulPrecision p) {
  switch (p) {
    case MatmulPrecision::Fp32: return "fp32";
    case MatmulPrecision::Bf16: return "bf16";
    case MatmulPrecision::Fp16: return "fp16";
  }
  return "?";
}

bool native_matmul_available(MatmulPrecision p, std::string* why) {
  if (p == MatmulPrecision::Fp32) return true;
  if (p == MatmulPrecision::Fp16) {
    *why = "fp16 products have no native CPU implementation here (oneDNN 2.6 has no fp16 CPU matmul)";
    return false;
  }
  if (active_isa() == Isa::Avx512 && onednn_has_bf16_dot()) return true;
  *why = "bf16 products need a CPU with avx512_bf16 or AMX (AMD Zen 4 and later, Intel Cooper Lake, Sapphire "
         "Rapids and later); oneDNN's instruction set here is " + onednn_isa_name() +
         (active_isa() != Isa::Avx512 ? std::string(" and STRATA_MAX_CPU_ISA caps the kernels at ") + isa_name(active_isa())
                                      : std::string());
  return false;
}

void set_matmul_precision(MatmulPrecision p, MatmulPath path) {
  std::string why;
  if (path == MatmulPath::Native && !native_matmul_available(p, &why)) fail(why);
  g_precision = p;
  g_path = path;
}

MatmulPrecision matmul_precision() { return g_precision; }

void set_tf32(bool on) { g_tf32 = on; }
bool tf32() { return g_tf32; }
MatmulPath matmul_path() { return g_path; }

std::string matmul_implementation(MatmulPrecision p, MatmulPath path) {
  if (p == MatmulPrecision::Fp32) return "fp32 GEMM";
  if (path == MatmulPath::Emulated) return std::string("emulated: inputs rounded to ") + precision_name(p) + ", fp32 GEMM";
  const dnnl::memory::desc x({64, 64}, dnnl::memory::data_type::bf16, dnnl::memory::format_tag::ab);
  const dnnl::memory::desc y({64, 64}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(x, x, y), cpu_engine());
  return std::string("oneDNN ") + pd.impl_info_str();
}

void round_to_precision(MatmulPrecision p, const float* x, float* y, size_t n) {
  const Rounding round = rounding(p);
  for (size_t i = 0; i < n; ++i) y[i] = round(x[i]);
}

namespace {

// One product whose operands fit the conversion buffers.
void converted_product(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                       int ldb, float beta, float* C, int ldc) {
  const Stored sa = stored(ta, M, K), sb = stored(tb, K, N);
  if (g_path == MatmulPath::Emulated) {
    thread_local std::vector<float> a, b;
    a.resize(static_cast<size_t>(sa.rows) * sa.cols);
    b.resize(static_cast<size_t>(sb.rows) * sb.cols);
    auto round_row = [p = g_precision.load()](const float* x, int n, float* y) {
      round_to_precision(p, x, y, static_cast<size_t>(n));
    };
    pack(A, lda, sa.rows, sa.cols, a.data(), round_row);
    pack(B, ldb, sb.rows, sb.cols, b.data(), round_row);
    plain_gemm(ta, tb, M, N, K, alpha, a.data(), sa.cols, b.data(), sb.cols, beta, C, ldc);
    return;
  }
  thread_local std::vector<uint16_t> a, b;
  a.resize(static_cast<size_t>(sa.rows) * sa.cols);
  b.resize(static_cast<size_t>(sb.rows) * sb.cols);
  pack(A, lda, sa.rows, sa.cols, a.data(), avx512::row_to_bf16);
  pack(B, ldb, sb.rows, sb.cols, b.data(), avx512::row_to_bf16);
  if (whole_product(true)) {
    bf16_matmul(ta, tb, M, N, K, alpha, a.data(), sa.cols, b.data(), sb.cols, beta, C, ldc);
    return;
  }
  for_each_tile(ta, tb, M, N, K, a.data(), sa.cols, b.data(), sb.cols, C, ldc,
                [&](int m, int n, const uint16_t* at, int lat, const uint16_t* bt, int lbt, float* c) {
                  bf16_matmul(ta, tb, m, n, K, alpha, at, lat, bt, lbt, beta, c, ldc);
                });
}

// kMostConvertedValues (kernels/matmul_precision.h): the buffers the operands are converted
// to stay allocated at their largest, so a product with bigger operands runs in parts:
// unbounded, GPT-2's LM head (a [50257, 768] weight, a [B*T, 50257] logit gradient) kept
// 100-180 MiB of them, more than bf16 saved activations free. Measured on a 2-core Zen 4
// (bench_train_step, DistilBERT / BERT / GPT-2 steps) with caps of 2^19 to 2^22 values: 2^21
// is as fast as unbounded or faster (the parts' operands stay in cache: DistilBERT b8 7%),
// 2^20 loses up to 25% and 2^19 up to 60% (parts too small for the library's blocking).
// K is split no shorter than this: shorter parts would re-read C more than they save.
constexpr int kShortestK = 1024;

// Splits a product by shape alone (the same parts on every run and thread count): along K
// while it is long (both operands shrink; the parts accumulate into C in fp32, beta applied
// by the first), else along M or N, whichever operand is larger (the other is converted
// again for each part).
void bounded_product(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                     int ldb, float beta, float* C, int ldc) {
  const size_t a = static_cast<size_t>(M) * K, b = static_cast<size_t>(K) * N;
  if (a + b <= kMostConvertedValues) return converted_product(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (K / 2 >= kShortestK) {
    const int k = K / 2;  // op(A)'s columns / op(B)'s rows k..
    bounded_product(ta, tb, M, N, k, alpha, A, lda, B, ldb, beta, C, ldc);
    bounded_product(ta, tb, M, N, K - k, alpha, ta ? A + static_cast<size_t>(k) * lda : A + k, lda,
                    tb ? B + k : B + static_cast<size_t>(k) * ldb, ldb, 1.f, C, ldc);
  } else if (a >= b && M > 1) {
    const int m = M / 2;  // op(A)'s rows and C's rows m..
    bounded_product(ta, tb, m, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    bounded_product(ta, tb, M - m, N, K, alpha, ta ? A + m : A + static_cast<size_t>(m) * lda, lda, B, ldb, beta,
                    C + static_cast<size_t>(m) * ldc, ldc);
  } else if (N > 1) {
    const int n = N / 2;  // op(B)'s columns and C's columns n..
    bounded_product(ta, tb, M, n, K, alpha, A, lda, B, ldb, beta, C, ldc);
    bounded_product(ta, tb, M, N - n, K, alpha, A, lda, tb ? B + static_cast<size_t>(n) * ldb : B + n, ldb, beta,
                    C + n, ldc);
  } else {
    converted_product(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

}  // namespace

void half_gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
               float beta, float* C, int ldc) {
  if (M == 0 || N == 0) return;
  bounded_product(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace strata::kernels
