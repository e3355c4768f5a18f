// The run-time choice of instruction set (kernels/cpu/isa.h) and its contract: every ISA's
// copy of the kernels in kernels/cpu/simd/ gives the baseline copy's bits. The copies this CPU
// cannot run are checked on a CPU that can (and by tests/check_isa_code.sh, which reads the
// machine code); ctest also runs the kernel tests with STRATA_MAX_CPU_ISA capped (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/isa_ops.h"
#include "test_util_fs.h"
#include "util/error.h"

namespace strata {
namespace {

namespace k = kernels;
using k::Isa;

TEST(Isa, CapKeepsTheIsaAtOrBelowIt) {
  EXPECT_EQ(k::choose_isa(Isa::Avx512, nullptr), Isa::Avx512);
  EXPECT_EQ(k::choose_isa(Isa::Avx512, ""), Isa::Avx512);
  EXPECT_EQ(k::choose_isa(Isa::Avx512, "avx2"), Isa::Avx2);
  EXPECT_EQ(k::choose_isa(Isa::Avx512, "AVX2"), Isa::Avx2);  // ONEDNN_MAX_CPU_ISA's spelling
  EXPECT_EQ(k::choose_isa(Isa::Avx2, "baseline"), Isa::Baseline);
  EXPECT_EQ(k::choose_isa(Isa::Avx2, "avx512"), Isa::Avx2);  // a cap is not a demand
  EXPECT_EQ(k::choose_isa(Isa::Baseline, "avx2"), Isa::Baseline);
}

TEST(Isa, UnknownCapIsAnErrorNamingTheVariable) {
  try {
    k::choose_isa(Isa::Avx2, "sse9");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "STRATA_MAX_CPU_ISA=sse9: expected baseline, avx2 or avx512 (the most the kernels may use)");
  }
}

// Also run by ctest with STRATA_MAX_CPU_ISA set: the process then uses at most that ISA.
TEST(Isa, ActiveIsaIsTheCpusUnderTheEnvironmentCap) {
  const char* cap = std::getenv("STRATA_MAX_CPU_ISA");
  EXPECT_EQ(k::active_isa(), k::choose_isa(k::detected_isa(), cap));
  EXPECT_LE(k::active_isa(), k::detected_isa());
  if (cap && std::strcmp(cap, "baseline") == 0) EXPECT_EQ(k::active_isa(), Isa::Baseline);
  EXPECT_STREQ(k::kernel_isa(), k::isa_name(k::active_isa()));
}

// `strata info` with STRATA_MAX_CPU_ISA set to `cap` in its environment (this process's is restored).
test::CommandResult info_with_cap(const char* cap, const test::ScratchDir& dir) {
  const char* old = std::getenv("STRATA_MAX_CPU_ISA");
  const std::string saved = old ? old : "";
  setenv("STRATA_MAX_CPU_ISA", cap, 1);
  const auto r = test::run_strata({"info", test::source_dir() + "/examples/spam/bert-small"}, dir);
  if (old) setenv("STRATA_MAX_CPU_ISA", saved.c_str(), 1);
  else unsetenv("STRATA_MAX_CPU_ISA");
  return r;
}

TEST(Isa, StrataInfoPrintsTheIsaAndABadCapStopsIt) {
  const test::ScratchDir dir;
  const auto r = info_with_cap("baseline", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cpu kernels    baseline"), std::string::npos) << r.out;
  test::expect_command_error(info_with_cap("avx3", dir),
                             {"STRATA_MAX_CPU_ISA=avx3: expected baseline, avx2 or avx512"});
}

std::vector<float> random_floats(std::mt19937_64& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

template <typename... V>
std::vector<char> bytes_of(const V&... v) {
  std::vector<char> out;
  (out.insert(out.end(), reinterpret_cast<const char*>(v.data()),
              reinterpret_cast<const char*>(v.data() + v.size())),
   ...);
  return out;
}

// Calls kernel `fn` of ISA `isa` (an expression, so it can sit in an initialiser).
#define ISA_CALL(fn, ...) [&] { STRATA_ISA_CALL(isa, fn, __VA_ARGS__); }()

using Outputs = std::vector<std::pair<std::string, std::vector<char>>>;  // kernel, its outputs' bytes

// Every kernel of kernels/cpu/simd/ in fp32 on one ISA, on sizes that leave vector tails.
Outputs run_every_kernel(Isa isa) {
  Outputs out;
  std::mt19937_64 rng(71);
  const size_t n = 2 * 4096 + 37;
  const auto x = random_floats(rng, n, -5, 5), dy = random_floats(rng, n, -1, 1);
  for (const auto a : {k::Activation::GeluErf, k::Activation::GeluTanh, k::Activation::Relu, k::Activation::Silu,
                       k::Activation::Tanh}) {
    std::vector<float> y(n), dx(n), y2(n), g(n), dx2(n);
    ISA_CALL(activation_forward<float>, a, x.data(), y.data(), n);
    ISA_CALL(activation_backward<float>, a, x.data(), dy.data(), dx.data(), n);
    ISA_CALL(activation_value_and_grad<float>, a, x.data(), y2.data(), g.data(), n);
    ISA_CALL(mul<float>, dy.data(), g.data(), dx2.data(), n);
    out.emplace_back("activation " + std::to_string(int(a)), bytes_of(y, dx, y2, g, dx2));
  }
  // LayerNorm over rows of 77 channels.
  const int N = 53, C = 77;
  const auto gamma = random_floats(rng, C, 0.5f, 1.5f), beta = random_floats(rng, C, -1, 1);
  std::vector<float> ln(N * C), mean(N), rstd(N), dln(N * C), dgamma(C, 0.0f), dbeta(C, 0.0f);
  ISA_CALL(layernorm_forward<float>, x.data(), gamma.data(), beta.data(), ln.data(), mean.data(), rstd.data(), N, C,
           1e-12);
  ISA_CALL(layernorm_backward<float>, x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(), dln.data(),
           dgamma.data(), dbeta.data(), N, C);
  out.emplace_back("layernorm", bytes_of(ln, mean, rstd, dln, dgamma, dbeta));
  // Backward recomputes layer norm outputs from the statistics: they must be the forward's bits.
  std::vector<float> ln_again(N * C);
  ISA_CALL(layernorm_apply<float>, x.data(), gamma.data(), beta.data(), mean.data(), rstd.data(), ln_again.data(), N, C);
  EXPECT_TRUE(ln_again == ln) << k::isa_name(isa) << ": layernorm_apply differs from layernorm_forward's output";
  // Attention: padded keys with dropout, and causal rows past one block of 64.
  for (const k::AttentionShape& s : {k::AttentionShape{3, 37, 48, 3, 0.1f, 5, 6},
                                     k::AttentionShape{2, 70, 32, 2, 0.0f, 0, 0, /*causal=*/true}}) {
    std::vector<int32_t> mask(s.B * s.T, 1);
    for (int t = s.T - 9; t < s.T; ++t) mask[t] = 0;
    const auto qkv = random_floats(rng, size_t(s.B) * s.T * 3 * s.C, -2, 2),
               dctx = random_floats(rng, size_t(s.B) * s.T * s.C, -1, 1);
    std::vector<float> probs(size_t(s.B) * s.NH * s.T * s.T), ctx(dctx.size()), dqkv(qkv.size());
    ISA_CALL(attention_forward<float>, s, qkv.data(), mask.data(), probs.data(), ctx.data());
    ISA_CALL(attention_backward<float>, s, qkv.data(), probs.data(), dctx.data(), dqkv.data());
    const k::CachedAttentionShape c{s.B, 3, s.T, s.T, s.C, s.NH};
    std::vector<float> scores(size_t(s.B) * s.NH * 3 * s.T), cctx(size_t(s.B) * 3 * s.C);
    ISA_CALL(attention_cached_forward<float>, c, qkv.data(), 3 * s.C, qkv.data() + s.C, qkv.data() + 2 * s.C,
             scores.data(), cctx.data());
    const std::string name = s.causal ? "causal attention" : "attention";
    out.emplace_back(name + " forward", bytes_of(probs, ctx));
    out.emplace_back(name + " backward", bytes_of(dqkv));
    out.emplace_back(name + " cached", bytes_of(scores, cctx));
  }
  // Embedding, cross entropy (with and without the gradient), dropout and the optimizers.
  const int V = 1031;
  std::uniform_int_distribution<int32_t> id(0, 8);
  std::vector<int32_t> ids(N), labels(N);
  for (int i = 0; i < N; ++i) ids[i] = id(rng), labels[i] = i % 5 == 0 ? -100 : id(rng) * 100;
  std::vector<float> emb(N * C, 0.0f), dtable(9 * C, 0.0f), dlogits(size_t(N) * V), drop(n), p = x, m(n, 0.0f),
      v(n, 0.0f), q = x, buf(n, 0.0f), sum(n);
  ISA_CALL(embedding_forward<float>, ids.data(), x.data(), emb.data(), N, C);
  ISA_CALL(embedding_backward<float>, ids.data(), dy.data(), dtable.data(), N, C, 3);
  out.emplace_back("embedding", bytes_of(emb, dtable));
  const auto logits = random_floats(rng, dlogits.size(), -8, 8);
  const std::vector<double> losses = {
      ISA_CALL(cross_entropy<float>, logits.data(), labels.data(), dlogits.data(), N, V, N),
      ISA_CALL(cross_entropy<float>, logits.data(), labels.data(), nullptr, N, V, N)};
  out.emplace_back("cross entropy", bytes_of(losses, dlogits));
  ISA_CALL(dropout_forward<float>, x.data(), drop.data(), n, 0.1f, 7, 8);
  out.emplace_back("dropout", bytes_of(drop));
  ISA_CALL(adamw_update<float>, p.data(), dy.data(), m.data(), v.data(), n, k::AdamWParams{1e-3, 0.9, 0.999, 1e-8, 0.01, 3});
  out.emplace_back("adamw", bytes_of(p, m, v));
  ISA_CALL(sgd_update<float>, q.data(), dy.data(), buf.data(), n, k::SGDParams{0.1, 0.9, 0.0, 0.01, true, false});
  out.emplace_back("sgd", bytes_of(q, buf));
  ISA_CALL(add<float>, x.data(), dy.data(), sum.data(), n);
  ISA_CALL(scale<float>, sum.data(), n, 0.3f);
  out.emplace_back("add, scale", bytes_of(sum));
  // The gradient norm's sum, over more than one of its blocks and a vector tail.
  const auto big = random_floats(rng, 3 * 16384 + 21, -3, 3);
  const std::vector<double> squares = {ISA_CALL(sum_squares<float>, big.data(), big.size())};
  out.emplace_back("sum_squares", bytes_of(squares));
  return out;
}

TEST(Isa, EveryCopyOfTheKernelsGivesTheBaselineBits) {
  const Outputs baseline = run_every_kernel(Isa::Baseline);
  int compared = 0;
  for (const Isa isa : {Isa::Avx2, Isa::Avx512}) {
    if (isa > k::detected_isa()) continue;
    const Outputs out = run_every_kernel(isa);
    ASSERT_EQ(out.size(), baseline.size());
    for (size_t i = 0; i < out.size(); ++i)
      EXPECT_TRUE(out[i].second == baseline[i].second) << k::isa_name(isa) << ": " << out[i].first;
    ++compared;
  }
  if (compared == 0) GTEST_SKIP() << "this CPU runs only the baseline kernels";
}

}  // namespace
}  // namespace strata
