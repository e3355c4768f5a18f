// Mixed-precision products (kernels/matmul_precision.h):
//  - the rounding to bf16 / fp16: nearest-even ties, nan, fp16's overflow and subnormals;
//  - the emulated path equals the fp64 product of the rounded inputs, for every transpose,
//    alpha and beta, and is not the fp32 product;
//  - the native bf16 path (where the CPU has avx512_bf16 or AMX) equals the emulated one up to
//    summation order, whole and in fixed tiles, on a thread of a team and outside one;
//  - both for products too large to convert at once (run in parts along K, M or N);
//  - fp64 products are never rounded.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/gemm_threading.h"
#include "kernels/matmul_precision.h"
#include "kernels/ops.h"
#include "models/config.h"
#include "train/mixed_precision.h"

namespace strata {
namespace {

namespace k = kernels;
using k::MatmulPath;
using k::MatmulPrecision;

// Restores fp32 products (and the threading mode) when a test ends, passed or not.
struct PrecisionScope {
  PrecisionScope(MatmulPrecision p, MatmulPath path) { k::set_matmul_precision(p, path); }
  ~PrecisionScope() {
    k::set_matmul_precision(MatmulPrecision::Fp32);
    k::set_gemm_threading(k::GemmThreading::FixedTiles);
  }
};

float rounded(MatmulPrecision p, float x) {
  float y;
  k::round_to_precision(p, &x, &y, 1);
  return y;
}

TEST(MixedPrecisionKernels, RoundsToNearestEven) {
  const auto bf16 = MatmulPrecision::Bf16, fp16 = MatmulPrecision::Fp16;
  // bf16 keeps 8 significant bits: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 (even: 1).
  EXPECT_EQ(rounded(bf16, 1.f + 0x1p-8f), 1.f);
  EXPECT_EQ(rounded(bf16, 1.f + 0x1p-7f + 0x1p-8f), 1.f + 0x1p-6f);  // tie, odd below: up
  EXPECT_EQ(rounded(bf16, 1.f + 0x1p-8f + 0x1p-20f), 1.f + 0x1p-7f);  // above the tie: up
  EXPECT_EQ(rounded(bf16, -3.f), -3.f);
  EXPECT_NEAR(rounded(bf16, 1e38f), 1e38f, 1e38f * 0x1p-8f);  // bf16 has fp32's range
  EXPECT_TRUE(std::isnan(rounded(bf16, std::numeric_limits<float>::quiet_NaN())));
  // fp16 keeps 11 significant bits and overflows past 65504 (ties at 65520 round to inf).
  EXPECT_EQ(rounded(fp16, 1.f + 0x1p-11f), 1.f);
  EXPECT_EQ(rounded(fp16, 65504.f), 65504.f);
  EXPECT_EQ(rounded(fp16, 65519.f), 65504.f);
  EXPECT_TRUE(std::isinf(rounded(fp16, 65520.f)));
  EXPECT_TRUE(std::isinf(rounded(fp16, -1e6f)) && rounded(fp16, -1e6f) < 0);
  // Subnormals are multiples of 2^-24; half of the smallest rounds to zero (even).
  EXPECT_EQ(rounded(fp16, 3 * 0x1p-25f), 0x1p-23f);  // 1.5 x 2^-24: tie, to 2 x 2^-24
  EXPECT_EQ(rounded(fp16, 0x1p-25f), 0.f);
  EXPECT_TRUE(std::isnan(rounded(fp16, std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(rounded(MatmulPrecision::Fp32, 1.f + 0x1p-20f), 1.f + 0x1p-20f);
}

struct Product {
  bool ta, tb;
  int M, N, K;
  float alpha, beta;
};

std::vector<float> random_values(std::mt19937_64& rng, size_t n) {
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// C = alpha op(A) op(B) + beta C in fp64 from the inputs rounded to p.
std::vector<double> reference(const Product& s, MatmulPrecision p, const std::vector<float>& A,
                              const std::vector<float>& B, const std::vector<float>& C) {
  auto at = [&](const std::vector<float>& X, bool t, int r, int c, int rows, int cols) {
    (void)rows;
    return static_cast<double>(rounded(p, t ? X[static_cast<size_t>(c) * rows + r] : X[static_cast<size_t>(r) * cols + c]));
  };
  std::vector<double> out(static_cast<size_t>(s.M) * s.N);
  for (int i = 0; i < s.M; ++i)
    for (int j = 0; j < s.N; ++j) {
      double acc = 0;
      for (int l = 0; l < s.K; ++l) acc += at(A, s.ta, i, l, s.M, s.K) * at(B, s.tb, l, j, s.K, s.N);
      out[static_cast<size_t>(i) * s.N + j] = s.alpha * acc + s.beta * static_cast<double>(C[static_cast<size_t>(i) * s.N + j]);
    }
  return out;
}

std::vector<float> run(const Product& s, const std::vector<float>& A, const std::vector<float>& B,
                       std::vector<float> C) {
  k::gemm<float>(s.ta, s.tb, s.M, s.N, s.K, s.alpha, A.data(), s.ta ? s.M : s.K, B.data(), s.tb ? s.K : s.N, s.beta,
                 C.data(), s.N);
  return C;
}

// Largest |got - want| relative to the scale of the products (K * 4 for values in [-2, 2)).
double max_error(const Product& s, const std::vector<float>& got, const std::vector<double>& want) {
  double e = 0;
  for (size_t i = 0; i < got.size(); ++i) e = std::max(e, std::abs(got[i] - want[i]));
  return e / (4.0 * s.K);
}

const Product kProducts[] = {
    {false, false, 37, 29, 53, 1.f, 0.f}, {false, true, 37, 29, 53, 0.125f, 1.f}, {true, false, 300, 17, 40, 1.f, 1.f},
    {true, true, 19, 270, 33, 0.5f, 0.f}, {false, true, 64, 64, 1030, 1.f, 0.f},
    // Operands of more than 2^21 values, which run in parts (half_gemm.cpp): along K (the
    // parts accumulate into C, beta from the first), along M, along N.
    // Each split with both layouts of each operand.
    {true, true, 32, 32, 33000, 0.5f, 1.f}, {false, false, 32, 32, 33000, 1.f, 0.f},
    {true, false, 2100, 8, 1000, 1.f, 1.f}, {false, true, 2100, 8, 1000, 1.f, 0.f},
    {false, true, 8, 2100, 1000, 1.f, 0.f}, {true, false, 8, 2100, 1000, 0.5f, 1.f},
};

TEST(MixedPrecisionKernels, EmulatedProductsAreExactProductsOfRoundedInputs) {
  for (const MatmulPrecision p : {MatmulPrecision::Bf16, MatmulPrecision::Fp16}) {
    for (const Product& s : kProducts) {
      SCOPED_TRACE(testing::Message() << k::precision_name(p) << " ta=" << s.ta << " tb=" << s.tb << " M=" << s.M
                                      << " N=" << s.N << " K=" << s.K);
      std::mt19937_64 rng(s.M * 7 + s.K);
      const auto A = random_values(rng, static_cast<size_t>(s.M) * s.K);
      const auto B = random_values(rng, static_cast<size_t>(s.K) * s.N);
      const auto C = random_values(rng, static_cast<size_t>(s.M) * s.N);
      const auto want = reference(s, p, A, B, C);
      const auto exact_fp32 = reference(s, MatmulPrecision::Fp32, A, B, C);
      PrecisionScope scope(p, MatmulPath::Emulated);
      const auto got = run(s, A, B, C);
      // fp32 summation error only (errors are relative to 4K, the products' scale); the
      // unrounded product is off by the inputs' rounding (2^-9 / 2^-12 relative each), far more
      // (a random walk over K products: relative to 4K, less as K grows).
      const double error = max_error(s, got, want);
      EXPECT_LT(error, 2e-7);
      EXPECT_GT(max_error(s, got, exact_fp32), std::max(10 * error, (p == MatmulPrecision::Bf16 ? 1e-5 : 1e-6) *
                                                                          std::min(1.0, std::sqrt(1030.0 / s.K))));
    }
  }
}

TEST(MixedPrecisionKernels, NativeBf16EqualsEmulated) {
  std::string why;
  if (!k::native_matmul_available(MatmulPrecision::Bf16, &why)) GTEST_SKIP() << why;
  for (const auto threading : {k::GemmThreading::FixedTiles, k::GemmThreading::Library}) {
    for (const Product& s : kProducts) {
      SCOPED_TRACE(testing::Message() << "library=" << (threading == k::GemmThreading::Library) << " ta=" << s.ta
                                      << " tb=" << s.tb << " M=" << s.M << " N=" << s.N << " K=" << s.K);
      std::mt19937_64 rng(s.N * 5 + s.K);
      const auto A = random_values(rng, static_cast<size_t>(s.M) * s.K);
      const auto B = random_values(rng, static_cast<size_t>(s.K) * s.N);
      const auto C = random_values(rng, static_cast<size_t>(s.M) * s.N);
      const auto want = reference(s, MatmulPrecision::Bf16, A, B, C);
      PrecisionScope scope(MatmulPrecision::Bf16, MatmulPath::Native);
      k::set_gemm_threading(threading);
      EXPECT_LT(max_error(s, run(s, A, B, C), want), 2e-7);
      // On one thread of a team (as the attention kernel calls it), each thread its own product.
      std::vector<std::vector<float>> per_thread(2);
#pragma omp parallel for num_threads(2)
      for (int t = 0; t < 2; ++t) per_thread[t] = run(s, A, B, C);
      for (const auto& got : per_thread) EXPECT_LT(max_error(s, got, want), 2e-7);
    }
  }
}

TEST(MixedPrecisionKernels, NativeFp16IsRefusedWithAReason) {
  std::string why;
  EXPECT_FALSE(k::native_matmul_available(MatmulPrecision::Fp16, &why));
  EXPECT_NE(why.find("fp16"), std::string::npos) << why;
  EXPECT_THROW(k::set_matmul_precision(MatmulPrecision::Fp16, MatmulPath::Native), std::exception);
  EXPECT_EQ(k::matmul_precision(), MatmulPrecision::Fp32);
}

TEST(MixedPrecisionKernels, Fp64ProductsAreNeverRounded) {
  const double a[2] = {1 + 0x1p-30, 1}, b[2] = {1, 1 + 0x1p-40};
  double c = 0;
  PrecisionScope scope(MatmulPrecision::Bf16, MatmulPath::Emulated);
  k::gemm<double>(false, false, 1, 1, 2, 1.0, a, 2, b, 1, 0.0, &c, 1);
  EXPECT_EQ(c, 2 + 0x1p-30 + 0x1p-40);
}



// What the memory plan counts for the converted operands of the largest product: a tiny
// masked-LM BERT (hidden 8, FFN 16, vocabulary 40) whose largest product is the LM head's,
// N x V + V x E values (the decoder's weight gradient reads dy [N, V] and its weight [V, E]).
TEST(MixedPrecisionPlan, ConvertedOperandsOnTheCpuAndOnAGpu) {
  const ModelConfig c = parse_model_config(
      {{"model_type", "bert"}, {"architectures", {"BertForMaskedLM"}}, {"vocab_size", 40}, {"hidden_size", 8},
       {"num_hidden_layers", 1}, {"num_attention_heads", 2}, {"intermediate_size", 16}, {"max_position_embeddings", 16},
       {"type_vocab_size", 2}},
      "tiny bert");
  const MixedPrecision fp32, native{MatmulPrecision::Bf16, MatmulPrecision::Bf16, MatmulPath::Native},
      emulated{MatmulPrecision::Bf16, MatmulPrecision::Bf16, MatmulPath::Emulated},
      fp16{MatmulPrecision::Fp16, MatmulPrecision::Fp16, MatmulPath::Native};
  const size_t head = 12 * 40 + 40 * 8;  // 12 tokens
  EXPECT_EQ(product_operand_bytes(fp32, c, 12), 0u);
  EXPECT_EQ(product_operand_bytes(fp32, c, 12, true), 0u);
  EXPECT_EQ(product_operand_bytes(native, c, 12), head * 2);
  EXPECT_EQ(product_operand_bytes(emulated, c, 12), head * 4);
  EXPECT_EQ(product_operand_bytes(fp16, c, 12), head * 4);  // no native fp16 on a CPU: fp32 buffers
  // A GPU converts both operands whole, 2 bytes a value whatever the CPU's path.
  EXPECT_EQ(product_operand_bytes(emulated, c, 12, true), head * 2);
  EXPECT_EQ(product_operand_bytes(fp16, c, 12, true), head * 2);
  // A product over a million tokens: the CPU converts it in parts of at most
  // kMostConvertedValues values, the GPU all of it.
  const size_t big = 1000000 * 40 + 1000000 * 8;
  EXPECT_EQ(product_operand_bytes(native, c, 1000000), k::kMostConvertedValues * 2);
  EXPECT_EQ(product_operand_bytes(native, c, 1000000, true), big * 2);
}

}  // namespace
}  // namespace strata
