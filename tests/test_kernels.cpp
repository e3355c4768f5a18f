// Tests of the CPU kernels behind kernels/ops.h:
//  - every op in float and double against the plain-loop double reference (reference_ops.h)
//    on awkward sizes;
//  - every backward against central finite differences of its forward, in double;
//  - the accumulation contract (input grads written, parameter grads added);
//  - dropout's statistics and mask regeneration;
//  - bit-identical results for 1 and 2 threads;
//  - optimizer steps and loss edge cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/gemm_threading.h"
#include "kernels/ops.h"
#include "reference_ops.h"

namespace strata {
namespace {

namespace k = kernels;
using kernels::Activation;
using kernels::AttentionShape;
using Vec = std::vector<double>;

constexpr Activation kAllActivations[] = {Activation::GeluErf, Activation::GeluTanh,
                                          Activation::Relu, Activation::Silu, Activation::Tanh};
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- helpers -------------------------------------------------------------------------

// Uniform values in [lo, hi), rounded to float so that the float kernel, the double kernel and
// the reference all see exactly the same inputs and only their arithmetic differs.
Vec random_vec(std::mt19937_64& rng, size_t n, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> dist(lo, hi);
  Vec v(n);
  for (double& x : v) x = float(dist(rng));
  return v;
}

std::vector<int32_t> random_ids(std::mt19937_64& rng, size_t n, int32_t lo, int32_t hi) {
  std::uniform_int_distribution<int32_t> dist(lo, hi);
  std::vector<int32_t> ids(n);
  for (int32_t& id : ids) id = dist(rng);
  return ids;
}

// Rounds derived inputs (e.g. saved statistics) to float for the same reason as random_vec.
Vec round_to_float(Vec v) {
  for (double& x : v) x = float(x);
  return v;
}

template <typename T>
std::vector<T> to(const Vec& v) {
  return std::vector<T>(v.begin(), v.end());
}

Vec times(const Vec& v, double s) {
  Vec out = v;
  for (double& x : out) x *= s;
  return out;
}

double dot(const Vec& a, const Vec& b) {
  double acc = 0;
  for (size_t i = 0; i < a.size(); ++i) acc += a[i] * b[i];
  return acc;
}

template <typename T>
const char* type_name() {
  return std::is_same_v<T, float> ? "float" : "double";
}

// Tolerance of a kernel against the double reference, relative to max |reference|.
template <typename T>
constexpr double kTol = std::is_same_v<T, float> ? 1e-5 : 1e-12;

// Finite differences are accurate to ~1e-9 here (h^2 truncation, 1e-16/h rounding), so this
// leaves room while still catching any wrong term.
constexpr double kGradTol = 1e-6;

// max |got - want| <= rel * max |want| (or <= rel when want is all zero); NaN always fails.
template <typename T>
testing::AssertionResult close(const std::vector<T>& got, const Vec& want, double rel) {
  if (got.size() != want.size())
    return testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  double scale = 0, worst = 0;
  size_t worst_i = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::abs(want[i]));
    double err = std::abs(double(got[i]) - want[i]);
    if (std::isnan(err)) err = INFINITY;
    if (err > worst) worst = err, worst_i = i;
  }
  const double bound = rel * (scale > 0 ? scale : 1.0);
  if (worst <= bound) return testing::AssertionSuccess();
  return testing::AssertionFailure()
         << "max error " << worst << " at index " << worst_i << " (got " << got[worst_i]
         << ", want " << want[worst_i] << "), bound " << bound;
}

// Restores the thread count a test changed, so later tests run as configured.
class ThreadCountGuard {
 public:
  ~ThreadCountGuard() { k::set_num_threads(saved_); }

 private:
  int saved_ = k::num_threads();
};

// Central differences d f / d x[i] for every i; x is perturbed in place and restored.
// Runs on one thread: f is a tiny problem evaluated thousands of times, and parallel regions
// that small cost more than the work (and stall badly when the cores are shared).
Vec numeric_grad(Vec& x, const std::function<double()>& f) {
  ThreadCountGuard guard;
  k::set_num_threads(1);
  constexpr double h = 1e-6;
  Vec g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    x[i] = x0 + h;
    const double up = f();
    x[i] = x0 - h;
    const double down = f();
    x[i] = x0;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

// Calls op(out) once on zeros and once on NaNs: an op that writes its output (rather than
// adding into it) produces the same bits both times.
void expect_overwrites(size_t n, const std::function<void(double*)>& op) {
  Vec zeros(n, 0.0), nans(n, kNaN);
  op(zeros.data());
  op(nans.data());
  EXPECT_EQ(0, std::memcmp(zeros.data(), nans.data(), n * sizeof(double)));
}

// Calls op(grad) twice on a zeroed buffer: an op that adds into its output doubles it.
void expect_accumulates(size_t n, const std::function<void(double*)>& op) {
  Vec grad(n, 0.0);
  op(grad.data());
  const Vec once = grad;
  op(grad.data());
  EXPECT_TRUE(close(grad, times(once, 2.0), 1e-14));
  EXPECT_GT(std::abs(once[0]) + std::abs(once[n - 1]), 0.0) << "gradient unexpectedly zero";
}

using Bytes = std::vector<unsigned char>;

template <typename V>
void append_bytes(Bytes& out, const V& v) {
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  out.insert(out.end(), p, p + v.size() * sizeof(v[0]));
}

template <typename... Vs>
Bytes bytes_of(const Vs&... vs) {
  Bytes out;
  (append_bytes(out, vs), ...);
  return out;
}

// Runs `op` (which computes from scratch and returns its outputs' bytes) with 1 and with 2
// threads; the header promises bit-identical results for any thread count.
void expect_same_bits_for_1_and_2_threads(const std::function<Bytes()>& op) {
  ThreadCountGuard guard;
  k::set_num_threads(1);
  const Bytes one = op();
  k::set_num_threads(2);
  ASSERT_EQ(2, k::num_threads());
  const Bytes two = op();
  ASSERT_EQ(one.size(), two.size());
  size_t differing = 0, first = one.size();
  for (size_t i = 0; i < one.size(); ++i) {
    if (one[i] == two[i]) continue;
    ++differing;
    first = std::min(first, i);
  }
  EXPECT_EQ(differing, 0u) << "of " << one.size() << " output bytes; the first is byte " << first;
}

// ---- gemm ----------------------------------------------------------------------------

template <typename T>
void check_gemm(bool trans_a, bool trans_b) {
  SCOPED_TRACE(testing::Message() << type_name<T>() << " trans_a=" << trans_a
                                  << " trans_b=" << trans_b);
  std::mt19937_64 rng(1);
  const int M = 7, N = 5, K = 13;
  // Leading dimensions wider than the matrices: a kernel that ignores them reads padding, and
  // the padding columns of C must come back untouched.
  const int rows_a = trans_a ? K : M, lda = (trans_a ? M : K) + 3;
  const int rows_b = trans_b ? N : K, ldb = (trans_b ? K : N) + 2;
  const int ldc = N + 4;
  const Vec A = random_vec(rng, size_t(rows_a) * lda), B = random_vec(rng, size_t(rows_b) * ldb);
  const Vec C0 = random_vec(rng, size_t(M) * ldc);
  const double alpha = 0.75, beta = -0.5;

  Vec want = C0;
  ref::gemm(trans_a, trans_b, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, want.data(), ldc);
  const auto a = to<T>(A), b = to<T>(B);
  auto got = to<T>(C0);
  k::gemm<T>(trans_a, trans_b, M, N, K, T(alpha), a.data(), lda, b.data(), ldb, T(beta),
             got.data(), ldc);
  EXPECT_TRUE(close(got, want, kTol<T>));
}

TEST(Kernels, GemmMatchesReference) {
  for (bool trans_a : {false, true}) {
    for (bool trans_b : {false, true}) {
      check_gemm<float>(trans_a, trans_b);
      check_gemm<double>(trans_a, trans_b);
    }
  }
}

// ---- linear --------------------------------------------------------------------------

constexpr int kN = 7, kIn = 13, kOut = 11;

template <typename T>
void check_linear_forward(bool with_bias) {
  SCOPED_TRACE(testing::Message() << type_name<T>() << " bias=" << with_bias);
  std::mt19937_64 rng(2);
  const Vec x = random_vec(rng, kN * kIn), W = random_vec(rng, kOut * kIn),
            b = random_vec(rng, kOut);
  Vec want(kN * kOut);
  ref::linear_forward(x.data(), W.data(), with_bias ? b.data() : nullptr, want.data(), kN, kIn,
                      kOut);
  const auto xt = to<T>(x), Wt = to<T>(W), bt = to<T>(b);
  std::vector<T> got(kN * kOut, T(kNaN));
  k::linear_forward<T>(xt.data(), Wt.data(), with_bias ? bt.data() : nullptr, got.data(), kN,
                       kIn, kOut);
  EXPECT_TRUE(close(got, want, kTol<T>));
}

TEST(Kernels, LinearForwardMatchesReference) {
  for (bool with_bias : {true, false}) {
    check_linear_forward<float>(with_bias);
    check_linear_forward<double>(with_bias);
  }
}

template <typename T>
void check_linear_backward() {
  SCOPED_TRACE(type_name<T>());
  std::mt19937_64 rng(3);
  const Vec x = random_vec(rng, kN * kIn), W = random_vec(rng, kOut * kIn),
            dy = random_vec(rng, kN * kOut);
  // Parameter grads start non-zero: the kernel must add into them.
  const Vec dW0 = random_vec(rng, kOut * kIn), db0 = random_vec(rng, kOut);
  Vec dx(kN * kIn), dW = dW0, db = db0;
  ref::linear_backward(x.data(), W.data(), dy.data(), dx.data(), dW.data(), db.data(), kN, kIn,
                       kOut);

  const auto xt = to<T>(x), Wt = to<T>(W), dyt = to<T>(dy);
  std::vector<T> dxt(kN * kIn), dWt = to<T>(dW0), dbt = to<T>(db0);
  k::linear_backward<T>(xt.data(), Wt.data(), dyt.data(), dxt.data(), dWt.data(), dbt.data(), kN,
                        kIn, kOut);
  EXPECT_TRUE(close(dxt, dx, kTol<T>));
  EXPECT_TRUE(close(dWt, dW, kTol<T>));
  EXPECT_TRUE(close(dbt, db, kTol<T>));

  // dx and db are optional (first layer, bias-free layers).
  std::vector<T> dW_only = to<T>(dW0);
  k::linear_backward<T>(xt.data(), Wt.data(), dyt.data(), nullptr, dW_only.data(), nullptr, kN,
                        kIn, kOut);
  EXPECT_TRUE(close(dW_only, dW, kTol<T>));
}

TEST(Kernels, LinearBackwardMatchesReference) {
  check_linear_backward<float>();
  check_linear_backward<double>();
}

TEST(Kernels, LinearBackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(4);
  const int N = 4, in = 7, out = 5;
  Vec x = random_vec(rng, N * in), W = random_vec(rng, out * in), b = random_vec(rng, out);
  const Vec w = random_vec(rng, N * out);  // objective sum(w .* y)
  auto objective = [&] {
    Vec y(N * out);
    k::linear_forward<double>(x.data(), W.data(), b.data(), y.data(), N, in, out);
    return dot(w, y);
  };
  Vec dx(N * in), dW(out * in, 0.0), db(out, 0.0);
  k::linear_backward<double>(x.data(), W.data(), w.data(), dx.data(), dW.data(), db.data(), N, in,
                             out);
  EXPECT_TRUE(close(dx, numeric_grad(x, objective), kGradTol)) << "dx";
  EXPECT_TRUE(close(dW, numeric_grad(W, objective), kGradTol)) << "dW";
  EXPECT_TRUE(close(db, numeric_grad(b, objective), kGradTol)) << "db";
}

// ---- activations ---------------------------------------------------------------------

TEST(Kernels, ParseActivationAcceptsHfNames) {
  const std::pair<const char*, Activation> known[] = {
      {"gelu", Activation::GeluErf},          {"gelu_new", Activation::GeluTanh},
      {"gelu_pytorch_tanh", Activation::GeluTanh}, {"gelu_fast", Activation::GeluTanh},
      {"relu", Activation::Relu},             {"silu", Activation::Silu},
      {"swish", Activation::Silu},            {"tanh", Activation::Tanh}};
  for (const auto& [name, want] : known) {
    // Start from a different value, so a parser that returns true without writing fails.
    Activation got = want == Activation::Tanh ? Activation::Relu : Activation::Tanh;
    EXPECT_TRUE(k::parse_activation(name, &got)) << name;
    EXPECT_EQ(got, want) << name;
  }
  for (const char* name : {"", "GELU", "quick_gelu", "gelu_10", "sigmoid", "relu6"}) {
    Activation got;
    EXPECT_FALSE(k::parse_activation(name, &got)) << name;
  }
}

template <typename T>
void check_activation(Activation a) {
  SCOPED_TRACE(testing::Message() << type_name<T>() << " activation " << int(a));
  std::mt19937_64 rng(5);
  const size_t n = 1031;  // odd, so vectorised loops need a tail
  const Vec x = random_vec(rng, n, -6, 6), dy = random_vec(rng, n);
  Vec y(n), dx(n);
  ref::activation_forward(a, x.data(), y.data(), n);
  ref::activation_backward(a, x.data(), dy.data(), dx.data(), n);

  const auto xt = to<T>(x);
  std::vector<T> yt(n);
  k::activation_forward<T>(a, xt.data(), yt.data(), n);
  EXPECT_TRUE(close(yt, y, kTol<T>)) << "forward";
  // dx may alias dy: run in place.
  auto grad = to<T>(dy);
  k::activation_backward<T>(a, xt.data(), grad.data(), grad.data(), n);
  EXPECT_TRUE(close(grad, dx, kTol<T>)) << "backward";
  // One pass for both: the forward's bits, and the factor that gives the backward's bits.
  std::vector<T> y2(n), g(n), dy_g(n);
  k::activation_value_and_grad<T>(a, xt.data(), y2.data(), g.data(), n);
  EXPECT_TRUE(y2 == yt) << "value_and_grad: value";
  const auto dyt = to<T>(dy);
  k::mul<T>(dyt.data(), g.data(), dy_g.data(), n);
  EXPECT_TRUE(dy_g == grad) << "value_and_grad: gradient";
  // In place, as the blocks' backward runs it: the derivative over the input.
  std::vector<T> in_place = xt, y3(n);
  k::activation_value_and_grad<T>(a, in_place.data(), y3.data(), in_place.data(), n);
  EXPECT_TRUE(y3 == yt && in_place == g) << "value_and_grad in place";
}

TEST(Kernels, ActivationsMatchReference) {
  for (Activation a : kAllActivations) {
    check_activation<float>(a);
    check_activation<double>(a);
  }
}

TEST(Kernels, ActivationBackwardMatchesFiniteDifferences) {
  for (Activation a : kAllActivations) {
    SCOPED_TRACE(int(a));
    std::mt19937_64 rng(6);
    const size_t n = 64;
    Vec x = random_vec(rng, n, -4, 4);
    const Vec w = random_vec(rng, n);
    auto objective = [&] {
      Vec y(n);
      k::activation_forward<double>(a, x.data(), y.data(), n);
      return dot(w, y);
    };
    Vec dx(n);
    k::activation_backward<double>(a, x.data(), w.data(), dx.data(), n);
    EXPECT_TRUE(close(dx, numeric_grad(x, objective), kGradTol));
  }
}

template <typename T>
void check_linear_act(Activation a) {
  SCOPED_TRACE(testing::Message() << type_name<T>() << " activation " << int(a));
  std::mt19937_64 rng(7);
  const Vec x = random_vec(rng, kN * kIn), W = random_vec(rng, kOut * kIn),
            b = random_vec(rng, kOut);
  Vec pre(kN * kOut), y(kN * kOut);
  ref::linear_act_forward(a, x.data(), W.data(), b.data(), pre.data(), y.data(), kN, kIn, kOut);
  const auto xt = to<T>(x), Wt = to<T>(W), bt = to<T>(b);
  std::vector<T> pret(kN * kOut), yt(kN * kOut);
  k::linear_act_forward<T>(a, xt.data(), Wt.data(), bt.data(), pret.data(), yt.data(), kN, kIn,
                           kOut);
  EXPECT_TRUE(close(pret, pre, kTol<T>)) << "pre";
  EXPECT_TRUE(close(yt, y, kTol<T>)) << "y";
}

TEST(Kernels, LinearActForwardMatchesReference) {
  for (Activation a : kAllActivations) {
    check_linear_act<float>(a);
    check_linear_act<double>(a);
  }
}

// The backward of linear_act is activation_backward on `pre` followed by linear_backward.
TEST(Kernels, LinearActBackwardMatchesFiniteDifferences) {
  for (Activation a : kAllActivations) {
    SCOPED_TRACE(int(a));
    std::mt19937_64 rng(8);
    const int N = 4, in = 7, out = 5;
    Vec x = random_vec(rng, N * in), W = random_vec(rng, out * in), b = random_vec(rng, out);
    const Vec w = random_vec(rng, N * out);
    Vec pre(N * out), y(N * out);
    auto objective = [&] {
      k::linear_act_forward<double>(a, x.data(), W.data(), b.data(), pre.data(), y.data(), N, in,
                                    out);
      return dot(w, y);
    };
    objective();
    Vec dpre(N * out), dx(N * in), dW(out * in, 0.0), db(out, 0.0);
    k::activation_backward<double>(a, pre.data(), w.data(), dpre.data(), pre.size());
    k::linear_backward<double>(x.data(), W.data(), dpre.data(), dx.data(), dW.data(), db.data(), N,
                               in, out);
    EXPECT_TRUE(close(dx, numeric_grad(x, objective), kGradTol)) << "dx";
    EXPECT_TRUE(close(dW, numeric_grad(W, objective), kGradTol)) << "dW";
    EXPECT_TRUE(close(db, numeric_grad(b, objective), kGradTol)) << "db";
  }
}

// ---- layernorm -----------------------------------------------------------------------

constexpr double kLnEps = 1e-5;

template <typename T>
void check_layernorm() {
  SCOPED_TRACE(type_name<T>());
  std::mt19937_64 rng(9);
  const int N = 7, C = 13;
  const Vec x = random_vec(rng, N * C, -2, 3), gamma = random_vec(rng, C),
            beta = random_vec(rng, C), dy = random_vec(rng, N * C);
  Vec y(N * C), mean(N), rstd(N);
  ref::layernorm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(),
                         N, C, kLnEps);
  const auto xt = to<T>(x), gt = to<T>(gamma), bt = to<T>(beta), dyt = to<T>(dy);
  std::vector<T> yt(N * C), meant(N), rstdt(N);
  k::layernorm_forward<T>(xt.data(), gt.data(), bt.data(), yt.data(), meant.data(), rstdt.data(),
                          N, C, kLnEps);
  EXPECT_TRUE(close(yt, y, kTol<T>)) << "y";
  EXPECT_TRUE(close(meant, mean, kTol<T>)) << "mean";
  EXPECT_TRUE(close(rstdt, rstd, kTol<T>)) << "rstd";
  // The output recomputed from the statistics (what backward does) is the forward's, bit for bit.
  std::vector<T> again(N * C);
  k::layernorm_apply<T>(xt.data(), gt.data(), bt.data(), meant.data(), rstdt.data(), again.data(), N, C);
  EXPECT_TRUE(again == yt) << "layernorm_apply";

  // The backward sees the same saved statistics as the reference.
  const Vec mean_in = round_to_float(mean), rstd_in = round_to_float(rstd);
  const Vec dgamma0 = random_vec(rng, C), dbeta0 = random_vec(rng, C);
  Vec dx(N * C), dgamma = dgamma0, dbeta = dbeta0;
  ref::layernorm_backward(x.data(), gamma.data(), mean_in.data(), rstd_in.data(), dy.data(),
                          dx.data(), dgamma.data(), dbeta.data(), N, C);
  const auto mt = to<T>(mean_in), rt = to<T>(rstd_in);
  std::vector<T> dxt(N * C), dgt = to<T>(dgamma0), dbt = to<T>(dbeta0);
  k::layernorm_backward<T>(xt.data(), gt.data(), mt.data(), rt.data(), dyt.data(), dxt.data(),
                           dgt.data(), dbt.data(), N, C);
  EXPECT_TRUE(close(dxt, dx, kTol<T>)) << "dx";
  EXPECT_TRUE(close(dgt, dgamma, kTol<T>)) << "dgamma";
  EXPECT_TRUE(close(dbt, dbeta, kTol<T>)) << "dbeta";
}

TEST(Kernels, LayerNormMatchesReference) {
  check_layernorm<float>();
  check_layernorm<double>();
}

TEST(Kernels, LayerNormBackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(10);
  const int N = 5, C = 13;
  Vec x = random_vec(rng, N * C, -2, 3), gamma = random_vec(rng, C), beta = random_vec(rng, C);
  const Vec w = random_vec(rng, N * C);
  Vec y(N * C), mean(N), rstd(N);
  auto objective = [&] {
    k::layernorm_forward<double>(x.data(), gamma.data(), beta.data(), y.data(), mean.data(),
                                 rstd.data(), N, C, kLnEps);
    return dot(w, y);
  };
  objective();
  Vec dx(N * C), dgamma(C, 0.0), dbeta(C, 0.0);
  k::layernorm_backward<double>(x.data(), gamma.data(), mean.data(), rstd.data(), w.data(),
                                dx.data(), dgamma.data(), dbeta.data(), N, C);
  EXPECT_TRUE(close(dx, numeric_grad(x, objective), kGradTol)) << "dx";
  EXPECT_TRUE(close(dgamma, numeric_grad(gamma, objective), kGradTol)) << "dgamma";
  EXPECT_TRUE(close(dbeta, numeric_grad(beta, objective), kGradTol)) << "dbeta";
}

template <typename T>
void check_rmsnorm() {
  SCOPED_TRACE(type_name<T>());
  std::mt19937_64 rng(11);
  const int N = 7, C = 13;
  const Vec x = random_vec(rng, N * C, -2, 3), gamma = random_vec(rng, C), dy = random_vec(rng, N * C);
  Vec y(N * C), rstd(N);
  ref::rmsnorm_forward(x.data(), gamma.data(), y.data(), rstd.data(), N, C, kLnEps);
  const auto xt = to<T>(x), gt = to<T>(gamma), dyt = to<T>(dy);
  std::vector<T> yt(N * C), rstdt(N);
  k::rmsnorm_forward<T>(xt.data(), gt.data(), yt.data(), rstdt.data(), N, C, kLnEps);
  EXPECT_TRUE(close(yt, y, kTol<T>)) << "y";
  EXPECT_TRUE(close(rstdt, rstd, kTol<T>)) << "rstd";

  const Vec rstd_in = round_to_float(rstd), dgamma0 = random_vec(rng, C);
  Vec dx(N * C), dgamma = dgamma0;
  ref::rmsnorm_backward(x.data(), gamma.data(), rstd_in.data(), dy.data(), dx.data(), dgamma.data(), N, C);
  const auto rt = to<T>(rstd_in);
  std::vector<T> dxt(N * C), dgt = to<T>(dgamma0);
  k::rmsnorm_backward<T>(xt.data(), gt.data(), rt.data(), dyt.data(), dxt.data(), dgt.data(), N, C);
  EXPECT_TRUE(close(dxt, dx, kTol<T>)) << "dx";
  EXPECT_TRUE(close(dgt, dgamma, kTol<T>)) << "dgamma";
}

TEST(Kernels, RmsNormMatchesReference) {
  check_rmsnorm<float>();
  check_rmsnorm<double>();
}

TEST(Kernels, RmsNormBackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(12);
  const int N = 5, C = 13;
  Vec x = random_vec(rng, N * C, -2, 3), gamma = random_vec(rng, C);
  const Vec w = random_vec(rng, N * C);
  Vec y(N * C), rstd(N);
  auto objective = [&] {
    k::rmsnorm_forward<double>(x.data(), gamma.data(), y.data(), rstd.data(), N, C, kLnEps);
    return dot(w, y);
  };
  objective();
  Vec dx(N * C), dgamma(C, 0.0);
  k::rmsnorm_backward<double>(x.data(), gamma.data(), rstd.data(), w.data(), dx.data(), dgamma.data(), N, C);
  EXPECT_TRUE(close(dx, numeric_grad(x, objective), kGradTol)) << "dx";
  EXPECT_TRUE(close(dgamma, numeric_grad(gamma, objective), kGradTol)) << "dgamma";
}

// ---- attention -----------------------------------------------------------------------

// B=3, T=5, C=12, NH=3 (HS=4). Batch 0 has two masked keys, batch 1 none, and batch 2 all of
// them when `fully_masked_batch` (so each of its rows attends uniformly).
struct AttentionCase {
  AttentionShape s;
  std::vector<int32_t> mask;
  Vec qkv;
  size_t qkv_size() const { return size_t(s.B) * s.T * 3 * s.C; }
  size_t probs_size() const { return size_t(s.B) * s.NH * s.T * s.T; }
  size_t ctx_size() const { return size_t(s.B) * s.T * s.C; }
};

AttentionCase small_attention_case(std::mt19937_64& rng, bool fully_masked_batch,
                                   float dropout_p = 0) {
  AttentionCase a{{3, 5, 12, 3, dropout_p, 1234, 7}, {}, {}};
  a.mask = {1, 0, 1, 1, 0,  //
            1, 1, 1, 1, 1,  //
            1, 1, 0, 1, 1};
  if (fully_masked_batch) std::fill(a.mask.begin() + 10, a.mask.end(), 0);
  a.qkv = random_vec(rng, a.qkv_size(), -2, 2);
  return a;
}

template <typename T>
void check_attention() {
  SCOPED_TRACE(type_name<T>());
  std::mt19937_64 rng(11);
  const AttentionCase a = small_attention_case(rng, /*fully_masked_batch=*/true);
  const AttentionShape& s = a.s;
  Vec probs(a.probs_size()), ctx(a.ctx_size());
  ref::attention_forward(s, a.qkv.data(), a.mask.data(), probs.data(), ctx.data());

  const auto qkv = to<T>(a.qkv);
  std::vector<T> probst(a.probs_size()), ctxt(a.ctx_size());
  k::attention_forward<T>(s, qkv.data(), a.mask.data(), probst.data(), ctxt.data());
  EXPECT_TRUE(close(probst, probs, kTol<T>)) << "probs";
  EXPECT_TRUE(close(ctxt, ctx, kTol<T>)) << "ctx";
  for (int b = 0; b < s.B; ++b) {
    const bool all_masked = b == 2;
    for (size_t r = 0; r < size_t(s.NH) * s.T; ++r) {
      for (int u = 0; u < s.T; ++u) {
        const T p = probst[(b * s.NH * s.T + r) * s.T + u];
        if (all_masked) {
          EXPECT_NEAR(p, 1.0 / s.T, kTol<T>) << "uniform row, b=" << b;
        } else if (a.mask[b * s.T + u] == 0) {
          EXPECT_EQ(p, T(0)) << "masked key must get probability exactly 0, b=" << b << " u=" << u;
        }
      }
    }
  }

  // The backward gets the reference probabilities, so only its own arithmetic is compared.
  const Vec probs_in = round_to_float(probs), dctx = random_vec(rng, a.ctx_size());
  Vec dqkv(a.qkv_size());
  ref::attention_backward(s, a.qkv.data(), probs_in.data(), dctx.data(), dqkv.data());
  const auto pt = to<T>(probs_in), dct = to<T>(dctx);
  std::vector<T> dqkvt(a.qkv_size(), T(kNaN));
  k::attention_backward<T>(s, qkv.data(), pt.data(), dct.data(), dqkvt.data());
  EXPECT_TRUE(close(dqkvt, dqkv, kTol<T>)) << "dqkv";
}

TEST(Kernels, AttentionMatchesReference) {
  check_attention<float>();
  check_attention<double>();
}

// Finite differences of sum(w .* ctx) w.r.t. every qkv entry, except q and k of a fully masked
// batch: its forward is constant in them (uniform probabilities) while the backward, which sees
// only probs, applies the softmax formula as PyTorch autograd does behind HF's additive mask.
void check_attention_gradient(AttentionCase& a, bool fully_masked_batch) {
  std::mt19937_64 rng(12);
  const Vec w = random_vec(rng, a.ctx_size());
  Vec probs(a.probs_size()), ctx(a.ctx_size());
  auto objective = [&] {
    k::attention_forward<double>(a.s, a.qkv.data(), a.mask.data(), probs.data(), ctx.data());
    return dot(w, ctx);
  };
  objective();
  Vec dqkv(a.qkv_size());
  k::attention_backward<double>(a.s, a.qkv.data(), probs.data(), w.data(), dqkv.data());
  Vec numeric = numeric_grad(a.qkv, objective);
  if (fully_masked_batch) {
    for (int t = 0; t < a.s.T; ++t) {
      const size_t row = (size_t(2) * a.s.T + t) * 3 * a.s.C;
      for (int c = 0; c < 2 * a.s.C; ++c) dqkv[row + c] = numeric[row + c] = 0;
    }
  }
  EXPECT_TRUE(close(dqkv, numeric, kGradTol));
}

TEST(Kernels, AttentionBackwardMatchesFiniteDifferences) {
  for (bool fully_masked_batch : {false, true}) {
    SCOPED_TRACE(fully_masked_batch ? "with a fully masked batch" : "partial masks");
    std::mt19937_64 rng(13);
    AttentionCase a = small_attention_case(rng, fully_masked_batch);
    check_attention_gradient(a, fully_masked_batch);
  }
}

// The dropout mask is a function of (seed, stream, index), so the forward is a deterministic
// function of qkv and the backward must be its exact derivative.
TEST(Kernels, AttentionWithDropoutMatchesFiniteDifferences) {
  std::mt19937_64 rng(14);
  AttentionCase a = small_attention_case(rng, /*fully_masked_batch=*/false, /*dropout_p=*/0.2f);
  check_attention_gradient(a, false);
}

// GPT-2's causal attention: key u > query t gets probability exactly 0 on top of the padding
// mask, and scale_scores = false leaves the scores unscaled. Batch 2 has its first two keys
// masked, so its rows 0 and 1 have no valid key (uniform over keys 0..t).
AttentionCase causal_attention_case(std::mt19937_64& rng, bool scale_scores, float dropout_p = 0) {
  AttentionCase a = small_attention_case(rng, false, dropout_p);
  a.s.causal = true;
  a.s.scale_scores = scale_scores;
  a.mask = {1, 0, 1, 1, 0,  //
            1, 1, 1, 1, 1,  //
            0, 0, 1, 1, 1};
  return a;
}

template <typename T>
void check_causal_attention(bool scale_scores) {
  SCOPED_TRACE(type_name<T>());
  std::mt19937_64 rng(21);
  const AttentionCase a = causal_attention_case(rng, scale_scores);
  const AttentionShape& s = a.s;
  Vec probs(a.probs_size()), ctx(a.ctx_size());
  ref::attention_forward(s, a.qkv.data(), a.mask.data(), probs.data(), ctx.data());
  const auto qkv = to<T>(a.qkv);
  std::vector<T> probst(a.probs_size()), ctxt(a.ctx_size());
  k::attention_forward<T>(s, qkv.data(), a.mask.data(), probst.data(), ctxt.data());
  EXPECT_TRUE(close(probst, probs, kTol<T>)) << "probs";
  EXPECT_TRUE(close(ctxt, ctx, kTol<T>)) << "ctx";
  for (int b = 0; b < s.B; ++b)
    for (int h = 0; h < s.NH; ++h)
      for (int t = 0; t < s.T; ++t)
        for (int u = t + 1; u < s.T; ++u)
          EXPECT_EQ(probst[((size_t(b) * s.NH + h) * s.T + t) * s.T + u], T(0)) << "future key b=" << b << " t=" << t;

  const Vec probs_in = round_to_float(probs), dctx = random_vec(rng, a.ctx_size());
  Vec dqkv(a.qkv_size());
  ref::attention_backward(s, a.qkv.data(), probs_in.data(), dctx.data(), dqkv.data());
  const auto pt = to<T>(probs_in), dct = to<T>(dctx);
  std::vector<T> dqkvt(a.qkv_size(), T(kNaN));
  k::attention_backward<T>(s, qkv.data(), pt.data(), dct.data(), dqkvt.data());
  EXPECT_TRUE(close(dqkvt, dqkv, kTol<T>)) << "dqkv";
}

TEST(Kernels, CausalAttentionMatchesReference) {
  for (bool scale_scores : {true, false}) {
    SCOPED_TRACE(scale_scores ? "scaled" : "unscaled");
    check_causal_attention<float>(scale_scores);
    check_causal_attention<double>(scale_scores);
  }
}

// Incremental decoding: the last Tq queries against a key/value cache whose rows hold more
// room than they use (ldt > Tk) must give the reference's causal rows T-Tq..T-1 (no padding).
template <typename T>
void check_cached_attention(bool scale_scores) {
  SCOPED_TRACE(type_name<T>());
  std::mt19937_64 rng(31);
  AttentionCase a = causal_attention_case(rng, scale_scores);
  std::fill(a.mask.begin(), a.mask.end(), 1);
  const AttentionShape& s = a.s;
  Vec probs(a.probs_size()), ctx(a.ctx_size());
  ref::attention_forward(s, a.qkv.data(), a.mask.data(), probs.data(), ctx.data());
  const int C = s.C, ldt = s.T + 2;
  std::vector<T> kc(size_t(s.B) * ldt * C, T(kNaN)), vc(kc.size(), T(kNaN));
  for (int b = 0; b < s.B; ++b)
    for (int t = 0; t < s.T; ++t)
      for (int c = 0; c < C; ++c) {
        const size_t row = (size_t(b) * s.T + t) * 3 * C;
        kc[(size_t(b) * ldt + t) * C + c] = T(a.qkv[row + C + c]);
        vc[(size_t(b) * ldt + t) * C + c] = T(a.qkv[row + 2 * C + c]);
      }
  for (int Tq : {1, 2, s.T}) {
    SCOPED_TRACE("Tq " + std::to_string(Tq));
    std::vector<T> q;  // the new positions' q|k|v rows
    for (int b = 0; b < s.B; ++b)
      for (int t = s.T - Tq; t < s.T; ++t)
        for (int c = 0; c < 3 * C; ++c) q.push_back(T(a.qkv[(size_t(b) * s.T + t) * 3 * C + c]));
    std::vector<T> scores(size_t(s.B) * s.NH * Tq * s.T, T(kNaN)), ctxt(size_t(s.B) * Tq * C, T(kNaN));
    const k::CachedAttentionShape cs{s.B, Tq, s.T, ldt, C, s.NH, scale_scores};
    k::attention_cached_forward<T>(cs, q.data(), 3 * C, kc.data(), vc.data(), scores.data(), ctxt.data());
    Vec want_probs, want_ctx;
    for (int b = 0; b < s.B; ++b)
      for (int h = 0; h < s.NH; ++h)
        for (int t = s.T - Tq; t < s.T; ++t)
          for (int u = 0; u < s.T; ++u) want_probs.push_back(probs[((size_t(b) * s.NH + h) * s.T + t) * s.T + u]);
    for (int b = 0; b < s.B; ++b)
      for (int t = s.T - Tq; t < s.T; ++t)
        for (int c = 0; c < C; ++c) want_ctx.push_back(ctx[(size_t(b) * s.T + t) * C + c]);
    EXPECT_TRUE(close(scores, want_probs, kTol<T>)) << "probs";
    EXPECT_TRUE(close(ctxt, want_ctx, kTol<T>)) << "ctx";
  }
}

TEST(Kernels, CachedAttentionMatchesCausalReference) {
  for (bool scale_scores : {true, false}) {
    SCOPED_TRACE(scale_scores ? "scaled" : "unscaled");
    check_cached_attention<float>(scale_scores);
    check_cached_attention<double>(scale_scores);
  }
}

// Rows 0 and 1 of batch 2 have no valid key: their forward is constant in q and k (uniform),
// so, as for the fully masked batch above, those rows' q and key 0..1's k are left out.
TEST(Kernels, CausalAttentionBackwardMatchesFiniteDifferences) {
  for (float p : {0.0f, 0.2f}) {
    SCOPED_TRACE(p > 0 ? "with dropout" : "no dropout");
    std::mt19937_64 rng(22);
    AttentionCase a = causal_attention_case(rng, /*scale_scores=*/p == 0, p);
    std::mt19937_64 wrng(23);
    const Vec w = random_vec(wrng, a.ctx_size());
    Vec probs(a.probs_size()), ctx(a.ctx_size());
    auto objective = [&] {
      k::attention_forward<double>(a.s, a.qkv.data(), a.mask.data(), probs.data(), ctx.data());
      return dot(w, ctx);
    };
    objective();
    Vec dqkv(a.qkv_size());
    k::attention_backward<double>(a.s, a.qkv.data(), probs.data(), w.data(), dqkv.data());
    Vec numeric = numeric_grad(a.qkv, objective);
    for (int t = 0; t < 2; ++t) {
      const size_t row = (size_t(2) * a.s.T + t) * 3 * a.s.C;
      for (int c = 0; c < 2 * a.s.C; ++c) dqkv[row + c] = numeric[row + c] = 0;
    }
    EXPECT_TRUE(close(dqkv, numeric, kGradTol));
  }
}

// Causal attention longer than one block of query rows (attention.cpp's kCausalBlock, 64):
// T = 130 is two full blocks and a partial one, and batch 0 has a padded key in each block.
AttentionCase long_causal_attention_case(std::mt19937_64& rng, int B, float dropout_p) {
  AttentionCase a{{B, 130, 8, 2, dropout_p, 4321, 5}, {}, {}};
  a.s.causal = true;
  a.mask.assign(size_t(B) * a.s.T, 1);
  for (int t : {3, 70, 129}) a.mask[t] = 0;
  a.qkv = random_vec(rng, a.qkv_size(), -2, 2);
  return a;
}

template <typename T>
void check_long_causal_attention() {
  SCOPED_TRACE(type_name<T>());
  std::mt19937_64 rng(24);
  const AttentionCase a = long_causal_attention_case(rng, 2, 0.0f);
  Vec probs(a.probs_size()), ctx(a.ctx_size());
  ref::attention_forward(a.s, a.qkv.data(), a.mask.data(), probs.data(), ctx.data());
  const auto qkv = to<T>(a.qkv);
  std::vector<T> probst(a.probs_size(), T(kNaN)), ctxt(a.ctx_size());
  k::attention_forward<T>(a.s, qkv.data(), a.mask.data(), probst.data(), ctxt.data());
  EXPECT_TRUE(close(probst, probs, kTol<T>)) << "probs, including the zeros above the diagonal blocks";
  EXPECT_TRUE(close(ctxt, ctx, kTol<T>)) << "ctx";

  const Vec probs_in = round_to_float(probs), dctx = random_vec(rng, a.ctx_size());
  Vec dqkv(a.qkv_size());
  ref::attention_backward(a.s, a.qkv.data(), probs_in.data(), dctx.data(), dqkv.data());
  const auto pt = to<T>(probs_in), dct = to<T>(dctx);
  std::vector<T> dqkvt(a.qkv_size(), T(kNaN));
  k::attention_backward<T>(a.s, qkv.data(), pt.data(), dct.data(), dqkvt.data());
  EXPECT_TRUE(close(dqkvt, dqkv, kTol<T>)) << "dqkv";
}

TEST(Kernels, LongCausalAttentionMatchesReference) {
  check_long_causal_attention<float>();
  check_long_causal_attention<double>();
}

// With dropout, which the reference lacks: the backward must drop the forward's elements in
// every block.
TEST(Kernels, LongCausalAttentionWithDropoutMatchesFiniteDifferences) {
  std::mt19937_64 rng(25);
  AttentionCase a = long_causal_attention_case(rng, 1, 0.2f);
  const Vec w = random_vec(rng, a.ctx_size());
  Vec probs(a.probs_size()), ctx(a.ctx_size());
  auto objective = [&] {
    k::attention_forward<double>(a.s, a.qkv.data(), a.mask.data(), probs.data(), ctx.data());
    return dot(w, ctx);
  };
  objective();
  Vec dqkv(a.qkv_size());
  k::attention_backward<double>(a.s, a.qkv.data(), probs.data(), w.data(), dqkv.data());
  EXPECT_TRUE(close(dqkv, numeric_grad(a.qkv, objective), kGradTol));
}

TEST(Kernels, AttentionDropoutAppliesAfterProbs) {
  std::mt19937_64 rng(15);
  const AttentionCase plain = small_attention_case(rng, false);
  AttentionShape dropped = plain.s;
  dropped.dropout_p = 0.2f;
  auto run = [&](const AttentionShape& s, Vec& probs, Vec& ctx) {
    probs.assign(plain.probs_size(), 0);
    ctx.assign(plain.ctx_size(), 0);
    k::attention_forward<double>(s, plain.qkv.data(), plain.mask.data(), probs.data(), ctx.data());
  };
  Vec probs0, ctx0, probs1, ctx1, probs2, ctx2;
  run(plain.s, probs0, ctx0);
  run(dropped, probs1, ctx1);
  AttentionShape other_stream = dropped;
  other_stream.stream += 1;
  run(other_stream, probs2, ctx2);
  // probs is saved before dropout; ctx sees the dropped probabilities.
  EXPECT_EQ(probs0, probs1);
  EXPECT_NE(ctx0, ctx1);
  EXPECT_NE(ctx1, ctx2) << "another stream must draw another mask";
}

// ---- embedding -----------------------------------------------------------------------

template <typename T>
void check_embedding() {
  SCOPED_TRACE(type_name<T>());
  std::mt19937_64 rng(16);
  const int N = 17, V = 11, C = 13, skip_id = 3;
  std::vector<int32_t> ids = random_ids(rng, N, 0, V - 1);
  ids[2] = ids[9] = skip_id;
  ids[4] = ids[5] = ids[12];  // repeated ids accumulate
  const Vec table = random_vec(rng, V * C), out0 = random_vec(rng, N * C),
            dout = random_vec(rng, N * C), dtable0 = random_vec(rng, V * C);

  // Both directions add into their outputs.
  Vec out = out0, dtable = dtable0;
  ref::embedding_forward(ids.data(), table.data(), out.data(), N, C);
  ref::embedding_backward(ids.data(), dout.data(), dtable.data(), N, C, skip_id);
  const auto tablet = to<T>(table), doutt = to<T>(dout);
  auto outt = to<T>(out0), dtablet = to<T>(dtable0);
  k::embedding_forward<T>(ids.data(), tablet.data(), outt.data(), N, C);
  k::embedding_backward<T>(ids.data(), doutt.data(), dtablet.data(), N, C, skip_id);
  EXPECT_TRUE(close(outt, out, kTol<T>)) << "forward";
  EXPECT_TRUE(close(dtablet, dtable, kTol<T>)) << "backward";
}

TEST(Kernels, EmbeddingMatchesReference) {
  check_embedding<float>();
  check_embedding<double>();
}

TEST(Kernels, EmbeddingBackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(17);
  const int N = 9, V = 6, C = 5;
  const std::vector<int32_t> ids = random_ids(rng, N, 0, V - 1);
  Vec table = random_vec(rng, V * C);
  const Vec w = random_vec(rng, N * C);
  auto objective = [&] {
    Vec out(N * C, 0.0);
    k::embedding_forward<double>(ids.data(), table.data(), out.data(), N, C);
    return dot(w, out);
  };
  Vec dtable(V * C, 0.0);
  k::embedding_backward<double>(ids.data(), w.data(), dtable.data(), N, C, /*skip_id=*/-1);
  EXPECT_TRUE(close(dtable, numeric_grad(table, objective), kGradTol));
}

// ---- losses --------------------------------------------------------------------------

template <typename T>
void check_cross_entropy() {
  SCOPED_TRACE(type_name<T>());
  std::mt19937_64 rng(18);
  const int N = 7, V = 13;
  const Vec logits = random_vec(rng, N * V, -3, 3);
  std::vector<int32_t> labels = random_ids(rng, N, 0, V - 1);
  labels[1] = labels[5] = ref::kIgnoreIndex;
  const double norm = N - 2;  // mean over the labelled rows
  Vec dlogits(N * V);
  const double loss = ref::cross_entropy(logits.data(), labels.data(), dlogits.data(), N, V, norm);

  const auto lt = to<T>(logits);
  std::vector<T> dlt(N * V, T(kNaN));
  EXPECT_NEAR(k::cross_entropy<T>(lt.data(), labels.data(), dlt.data(), N, V, norm), loss,
              kTol<T> * loss);
  EXPECT_TRUE(close(dlt, dlogits, kTol<T>));
  EXPECT_NEAR(k::cross_entropy<T>(lt.data(), labels.data(), nullptr, N, V, norm), loss,
              kTol<T> * loss)
      << "without dlogits";
}

TEST(Kernels, CrossEntropyMatchesReference) {
  check_cross_entropy<float>();
  check_cross_entropy<double>();
}

TEST(Kernels, CrossEntropyGradientMatchesFiniteDifferences) {
  std::mt19937_64 rng(19);
  const int N = 5, V = 7;
  Vec logits = random_vec(rng, N * V, -3, 3);
  std::vector<int32_t> labels = random_ids(rng, N, 0, V - 1);
  labels[3] = ref::kIgnoreIndex;
  auto objective = [&] {
    return k::cross_entropy<double>(logits.data(), labels.data(), nullptr, N, V, 4.0);
  };
  Vec dlogits(N * V);
  k::cross_entropy<double>(logits.data(), labels.data(), dlogits.data(), N, V, 4.0);
  EXPECT_TRUE(close(dlogits, numeric_grad(logits, objective), kGradTol));
}

template <typename T>
void check_cross_entropy_edge_cases() {
  SCOPED_TRACE(type_name<T>());
  std::mt19937_64 rng(20);
  const int N = 4, V = 6;
  // Every row ignored (e.g. a batch with no masked tokens): a caller that clamps the count
  // passes norm 1 and must get a zero loss and zero gradient, not NaN.
  const auto logits = to<T>(random_vec(rng, N * V));
  const std::vector<int32_t> ignored(N, ref::kIgnoreIndex);
  std::vector<T> dl(N * V, T(kNaN));
  EXPECT_EQ(k::cross_entropy<T>(logits.data(), ignored.data(), dl.data(), N, V, 1.0), 0.0);
  EXPECT_TRUE(close(dl, Vec(N * V, 0.0), 0.0));

  // Logits of magnitude 1e4 overflow a naive exp; the loss must stay finite and correct.
  const Vec big = times(random_vec(rng, N * V), 1e4);
  const std::vector<int32_t> labels = random_ids(rng, N, 0, V - 1);
  Vec want_dl(N * V);
  const double want = ref::cross_entropy(big.data(), labels.data(), want_dl.data(), N, V, N);
  const auto bigt = to<T>(big);
  const double got = k::cross_entropy<T>(bigt.data(), labels.data(), dl.data(), N, V, N);
  EXPECT_TRUE(std::isfinite(got));
  EXPECT_NEAR(got, want, kTol<T> * want);
  EXPECT_TRUE(close(dl, want_dl, kTol<T>));
}

TEST(Kernels, CrossEntropyHandlesAllIgnoredAndLargeLogits) {
  check_cross_entropy_edge_cases<float>();
  check_cross_entropy_edge_cases<double>();
}

// mse and bce_with_logits share a signature, so one check serves both.
using RefElementwiseLoss = double (*)(const double*, const double*, double*, size_t, double);
template <typename T>
using FastElementwiseLoss = double (*)(const T*, const double*, T*, size_t, double);

template <typename T>
void check_elementwise_loss(RefElementwiseLoss ref_loss, FastElementwiseLoss<T> fast_loss,
                            double x_range, double target_lo) {
  SCOPED_TRACE(type_name<T>());
  std::mt19937_64 rng(21);
  const size_t n = 37;
  const double norm = 5;
  const Vec x = random_vec(rng, n, -x_range, x_range);
  const Vec target = random_vec(rng, n, target_lo, 1);
  Vec dx(n);
  const double loss = ref_loss(x.data(), target.data(), dx.data(), n, norm);
  const auto xt = to<T>(x);
  std::vector<T> dxt(n, T(kNaN));
  const double got = fast_loss(xt.data(), target.data(), dxt.data(), n, norm);
  EXPECT_TRUE(std::isfinite(got));
  EXPECT_NEAR(got, loss, kTol<T> * loss);
  EXPECT_TRUE(close(dxt, dx, kTol<T>));
  EXPECT_NEAR(fast_loss(xt.data(), target.data(), nullptr, n, norm), loss, kTol<T> * loss)
      << "without dx";
}

TEST(Kernels, MseMatchesReference) {
  check_elementwise_loss<float>(ref::mse, k::mse<float>, 3, -1);
  check_elementwise_loss<double>(ref::mse, k::mse<double>, 3, -1);
}

TEST(Kernels, BceWithLogitsMatchesReference) {
  // Soft targets in [0, 1]; logits up to 1e4 must not overflow.
  for (double x_range : {4.0, 1e4}) {
    SCOPED_TRACE(x_range);
    check_elementwise_loss<float>(ref::bce_with_logits, k::bce_with_logits<float>, x_range, 0);
    check_elementwise_loss<double>(ref::bce_with_logits, k::bce_with_logits<double>, x_range, 0);
  }
}

TEST(Kernels, ElementwiseLossGradientsMatchFiniteDifferences) {
  const std::pair<const char*, FastElementwiseLoss<double>> losses[] = {
      {"mse", k::mse<double>}, {"bce_with_logits", k::bce_with_logits<double>}};
  for (const auto& [name, loss] : losses) {
    SCOPED_TRACE(name);
    std::mt19937_64 rng(22);
    const size_t n = 23;
    Vec x = random_vec(rng, n, -3, 3);
    const Vec target = random_vec(rng, n, 0, 1);
    auto objective = [&] { return loss(x.data(), target.data(), nullptr, n, 3.0); };
    Vec dx(n);
    loss(x.data(), target.data(), dx.data(), n, 3.0);
    EXPECT_TRUE(close(dx, numeric_grad(x, objective), kGradTol));
  }
}

// ---- dropout -------------------------------------------------------------------------

TEST(Kernels, DropoutWithZeroProbabilityIsIdentity) {
  std::mt19937_64 rng(23);
  const size_t n = 1001;
  const auto x = to<float>(random_vec(rng, n));
  std::vector<float> y(n, NAN), dx(n, NAN);
  k::dropout_forward<float>(x.data(), y.data(), n, 0.0f, 1, 2);
  k::dropout_backward<float>(x.data(), dx.data(), n, 0.0f, 1, 2);
  EXPECT_EQ(y, x);
  EXPECT_EQ(dx, x);
  std::vector<float> in_place = x;
  k::dropout_forward<float>(in_place.data(), in_place.data(), n, 0.0f, 1, 2);
  EXPECT_EQ(in_place, x);
}

template <typename T>
void check_dropout_statistics() {
  SCOPED_TRACE(type_name<T>());
  std::mt19937_64 rng(24);
  const size_t n = 1'000'000, blocks = 10;
  const float p = 0.1f;
  // Inputs bounded away from zero, so an output of zero means "dropped".
  const auto x = to<T>(random_vec(rng, n, 0.5, 1.5));
  std::vector<T> y(n);
  k::dropout_forward<T>(x.data(), y.data(), n, p, 42, 3);

  size_t kept = 0, kept_pairs = 0, bad_scale = 0;
  std::vector<size_t> kept_in_block(blocks, 0);
  for (size_t i = 0; i < n; ++i) {
    if (y[i] == T(0)) continue;
    ++kept;
    ++kept_in_block[i * blocks / n];
    if (i > 0 && y[i - 1] != T(0)) ++kept_pairs;
    const double want = double(x[i]) / (1.0 - double(p));
    if (std::abs(y[i] - want) > 1e-6 * want) ++bad_scale;
  }
  // 5 binomial standard deviations (sd = sqrt(p(1-p)/n) = 3e-4): tighter than 0.5% so that a
  // biased generator is caught, with a false-failure chance below 1e-6.
  EXPECT_NEAR(double(kept) / n, 0.9, 5 * std::sqrt(0.09 / n));
  for (size_t b = 0; b < blocks; ++b)
    EXPECT_NEAR(double(kept_in_block[b]) * blocks / n, 0.9, 5 * std::sqrt(0.09 * blocks / n))
        << "block " << b;
  // Neighbouring elements are independent: both kept with probability 0.81.
  EXPECT_NEAR(double(kept_pairs) / n, 0.81, 5 * std::sqrt(0.81 * 0.19 / n));
  EXPECT_EQ(bad_scale, 0u) << "kept values must be scaled by exactly 1/(1-p)";

  // The backward regenerates the mask: dx is non-zero exactly where y is, and scaled alike.
  // dx may alias dy, so run it in place.
  std::vector<T> grad = x;
  k::dropout_backward<T>(grad.data(), grad.data(), n, p, 42, 3);
  size_t mismatched = 0;
  for (size_t i = 0; i < n; ++i) mismatched += grad[i] != y[i];
  EXPECT_EQ(mismatched, 0u);

  // Forward in place gives the same result.
  std::vector<T> in_place = x;
  k::dropout_forward<T>(in_place.data(), in_place.data(), n, p, 42, 3);
  EXPECT_EQ(in_place, y);
}

TEST(Kernels, DropoutKeepsExpectedFractionAndBackwardRegeneratesMask) {
  check_dropout_statistics<float>();
  check_dropout_statistics<double>();
}

std::vector<bool> dropout_mask(size_t n, float p, uint64_t seed, uint64_t stream) {
  const std::vector<float> ones(n, 1.0f);
  std::vector<float> y(n);
  k::dropout_forward<float>(ones.data(), y.data(), n, p, seed, stream);
  std::vector<bool> kept(n);
  for (size_t i = 0; i < n; ++i) kept[i] = y[i] != 0.0f;
  return kept;
}

double disagreement(const std::vector<bool>& a, const std::vector<bool>& b) {
  size_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
  return double(differ) / a.size();
}

// A block of columns of a [rows, ld] tensor drops what dropout over the whole tensor drops there
// (a tensor-parallel rank's share of an activation); the whole width is dropout_forward itself.
TEST(Kernels, DropoutBlockDropsTheWholeTensorsElements) {
  std::mt19937_64 rng(25);
  const size_t rows = 5, ld = 3000, cols = 1000, first = 2000;
  const auto whole = to<double>(random_vec(rng, rows * ld, 0.5, 1.5));
  std::vector<double> dropped(whole.size());
  k::dropout_forward<double>(whole.data(), dropped.data(), whole.size(), 0.3f, 8, 4);
  std::vector<double> block(rows * cols), got(rows * cols);
  for (size_t r = 0; r < rows; ++r)
    std::copy_n(whole.data() + r * ld + first, cols, block.data() + r * cols);
  k::dropout_block<double>(block.data(), got.data(), rows, cols, ld, first, 0.3f, 8, 4);
  size_t differ = 0, kept = 0;
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) {
      differ += got[r * cols + c] != dropped[r * ld + first + c];
      kept += got[r * cols + c] != 0;
    }
  EXPECT_EQ(differ, 0u);
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, rows * cols);
  std::vector<double> in_place = whole;  // all of the columns, in place
  k::dropout_block<double>(in_place.data(), in_place.data(), rows, ld, ld, 0, 0.3f, 8, 4);
  EXPECT_EQ(in_place, dropped);
}

TEST(Kernels, DropoutMasksDependOnSeedStreamAndIndexOnly) {
  const size_t n = 100'000;
  const float p = 0.1f;
  const auto base = dropout_mask(n, p, 7, 1);
  EXPECT_EQ(dropout_mask(n, p, 7, 1), base) << "same seed and stream, same mask";
  // Independent masks disagree with probability 2 p (1-p) = 0.18.
  EXPECT_NEAR(disagreement(dropout_mask(n, p, 7, 2), base), 0.18, 0.01) << "other stream";
  EXPECT_NEAR(disagreement(dropout_mask(n, p, 8, 1), base), 0.18, 0.01) << "other seed";
  // Element i depends on i alone, not on n: a shorter call draws a prefix of the same mask.
  const auto prefix = dropout_mask(1000, p, 7, 1);
  EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), base.begin()));
}

// ---- optimizers ----------------------------------------------------------------------

// The updates are element-wise, a few roundings per element, so float must agree more tightly
// than kTol: a coefficient rounded the wrong way (e.g. 1 - float(0.999), off by 1.3e-5
// relative) would slip through kTol.
template <typename T>
constexpr double kOptimTol = std::is_same_v<T, float> ? 1e-6 : 1e-12;

template <typename T>
void check_adamw() {
  SCOPED_TRACE(type_name<T>());
  std::mt19937_64 rng(25);
  const size_t n = 37;
  Vec p = random_vec(rng, n), m(n, 0.0), v(n, 0.0);
  auto pt = to<T>(p), mt = to<T>(m), vt = to<T>(v);
  k::AdamWParams a{1e-2, 0.9, 0.999, 1e-8, 0.1, 0};
  for (int64_t step = 1; step <= 3; ++step) {
    SCOPED_TRACE(step);
    a.step = step;
    const Vec g = random_vec(rng, n);
    const Vec p_before = p;
    ref::adamw_update(p.data(), g.data(), m.data(), v.data(), n, a);
    if (step == 1) {
      // Pins the reference to PyTorch: from zero moments the first step is
      // p (1 - lr wd) - lr g / (|g| + eps).
      for (size_t i = 0; i < n; ++i)
        ASSERT_NEAR(p[i], p_before[i] * (1 - a.lr * a.weight_decay) -
                              a.lr * g[i] / (std::abs(g[i]) + a.eps), 1e-15);
    }
    const auto gt = to<T>(g);
    k::adamw_update<T>(pt.data(), gt.data(), mt.data(), vt.data(), n, a);
    EXPECT_TRUE(close(pt, p, kOptimTol<T>)) << "p";
    EXPECT_TRUE(close(mt, m, kOptimTol<T>)) << "m";
    EXPECT_TRUE(close(vt, v, kOptimTol<T>)) << "v";
  }
}

TEST(Kernels, AdamWMatchesReferenceForThreeSteps) {
  check_adamw<float>();
  check_adamw<double>();
}

template <typename T>
void check_sgd(double momentum, double dampening, bool nesterov) {
  SCOPED_TRACE(testing::Message() << type_name<T>() << " momentum=" << momentum
                                  << " nesterov=" << nesterov);
  std::mt19937_64 rng(26);
  const size_t n = 37;
  Vec p = random_vec(rng, n), buf(n, 0.0);
  auto pt = to<T>(p), buft = to<T>(buf);
  k::SGDParams a{0.1, momentum, dampening, 0.01, nesterov, true};
  for (int step = 1; step <= 3; ++step) {
    SCOPED_TRACE(step);
    a.first_step = step == 1;
    const Vec g = random_vec(rng, n);
    ref::sgd_update(p.data(), g.data(), buf.data(), n, a);
    const auto gt = to<T>(g);
    k::sgd_update<T>(pt.data(), gt.data(), buft.data(), n, a);
    EXPECT_TRUE(close(pt, p, kOptimTol<T>)) << "p";
    // Without momentum PyTorch keeps no buffer, so only p is specified.
    if (momentum != 0) {
      EXPECT_TRUE(close(buft, buf, kOptimTol<T>)) << "momentum buffer";
    }
  }
}

TEST(Kernels, SgdMatchesReferenceForThreeSteps) {
  for (bool nesterov : {false, true}) {
    check_sgd<float>(0.9, nesterov ? 0.0 : 0.1, nesterov);  // PyTorch: nesterov needs dampening 0
    check_sgd<double>(0.9, nesterov ? 0.0 : 0.1, nesterov);
  }
  check_sgd<float>(0.0, 0.0, false);
  check_sgd<double>(0.0, 0.0, false);
}

// ---- small helpers -------------------------------------------------------------------

template <typename T>
void check_small_helpers() {
  SCOPED_TRACE(type_name<T>());
  std::mt19937_64 rng(27);
  const size_t n = 100'003;
  const Vec a = random_vec(rng, n), b = random_vec(rng, n);
  const auto at = to<T>(a), bt = to<T>(b);
  // Accumulated in double whatever T is, so float inputs give a double-accurate sum.
  const double want = ref::sum_squares(a.data(), n);
  EXPECT_NEAR(k::sum_squares<T>(at.data(), n), want, 1e-12 * want);

  auto scaled = at;
  k::scale<T>(scaled.data(), n, T(0.5));  // exact in binary, so compare exactly
  EXPECT_TRUE(close(scaled, times(a, 0.5), 0.0));

  Vec sum(n);
  ref::add(a.data(), b.data(), sum.data(), n);
  auto y = at;
  k::add<T>(y.data(), bt.data(), y.data(), n);  // y may alias a
  EXPECT_TRUE(close(y, sum, kTol<T>));
  y = bt;
  k::add<T>(at.data(), y.data(), y.data(), n);  // ... or b
  EXPECT_TRUE(close(y, sum, kTol<T>));
}

TEST(Kernels, SumSquaresScaleAndAddMatchReference) {
  check_small_helpers<float>();
  check_small_helpers<double>();
}

// ---- accumulation contract -----------------------------------------------------------

// Input gradients (and forward outputs) are written; parameter gradients are added into.
TEST(Kernels, BackwardOpsWriteInputGradsAndAddParamGrads) {
  std::mt19937_64 rng(28);
  const int N = 7, in = 13, out = 11;
  const Vec x = random_vec(rng, N * in), W = random_vec(rng, out * in),
            dy = random_vec(rng, N * out);
  {
    SCOPED_TRACE("linear_backward");
    expect_overwrites(N * in, [&](double* dx) {
      Vec dW(out * in, 0.0), db(out, 0.0);
      k::linear_backward<double>(x.data(), W.data(), dy.data(), dx, dW.data(), db.data(), N, in,
                                 out);
    });
    expect_accumulates(out * in, [&](double* dW) {
      k::linear_backward<double>(x.data(), W.data(), dy.data(), nullptr, dW, nullptr, N, in, out);
    });
    expect_accumulates(out, [&](double* db) {
      Vec dW(out * in, 0.0);
      k::linear_backward<double>(x.data(), W.data(), dy.data(), nullptr, dW.data(), db, N, in,
                                 out);
    });
  }
  {
    SCOPED_TRACE("layernorm_backward");
    const Vec gamma = random_vec(rng, in), beta = random_vec(rng, in),
              dln = random_vec(rng, N * in);
    Vec y(N * in), mean(N), rstd(N);
    k::layernorm_forward<double>(x.data(), gamma.data(), beta.data(), y.data(), mean.data(),
                                 rstd.data(), N, in, kLnEps);
    auto backward = [&](double* dx, double* dgamma, double* dbeta) {
      k::layernorm_backward<double>(x.data(), gamma.data(), mean.data(), rstd.data(), dln.data(),
                                    dx, dgamma, dbeta, N, in);
    };
    expect_overwrites(N * in, [&](double* dx) {
      Vec dgamma(in, 0.0), dbeta(in, 0.0);
      backward(dx, dgamma.data(), dbeta.data());
    });
    expect_accumulates(in, [&](double* dgamma) {
      Vec dx(N * in), dbeta(in, 0.0);
      backward(dx.data(), dgamma, dbeta.data());
    });
    expect_accumulates(in, [&](double* dbeta) {
      Vec dx(N * in), dgamma(in, 0.0);
      backward(dx.data(), dgamma.data(), dbeta);
    });
  }
  {
    SCOPED_TRACE("activation_backward");
    expect_overwrites(N * in, [&](double* dx) {
      k::activation_backward<double>(Activation::GeluErf, x.data(), x.data(), dx, N * in);
    });
  }
  {
    SCOPED_TRACE("dropout_backward");
    expect_overwrites(N * in, [&](double* dx) {
      k::dropout_backward<double>(x.data(), dx, N * in, 0.3f, 5, 6);
    });
  }
  {
    SCOPED_TRACE("attention_backward");
    AttentionCase a = small_attention_case(rng, true);
    Vec probs(a.probs_size()), ctx(a.ctx_size());
    k::attention_forward<double>(a.s, a.qkv.data(), a.mask.data(), probs.data(), ctx.data());
    const Vec dctx = random_vec(rng, a.ctx_size());
    expect_overwrites(a.qkv_size(), [&](double* dqkv) {
      k::attention_backward<double>(a.s, a.qkv.data(), probs.data(), dctx.data(), dqkv);
    });
  }
  {
    SCOPED_TRACE("embedding_backward");
    const std::vector<int32_t> ids = {0, 3, 3, 1, 4, 0, 3};
    expect_accumulates(5 * in, [&](double* dtable) {
      k::embedding_backward<double>(ids.data(), x.data(), dtable, N, in, /*skip_id=*/1);
    });
  }
  {
    SCOPED_TRACE("losses");
    const std::vector<int32_t> labels = {0, 12, -100, 5, 7, 1, 2};
    const Vec target = random_vec(rng, N * in, 0, 1);
    expect_overwrites(N * in, [&](double* dlogits) {
      k::cross_entropy<double>(x.data(), labels.data(), dlogits, N, in, 6.0);
    });
    expect_overwrites(N * in, [&](double* dx) {
      k::mse<double>(x.data(), target.data(), dx, N * in, 6.0);
    });
    expect_overwrites(N * in, [&](double* dx) {
      k::bce_with_logits<double>(x.data(), target.data(), dx, N * in, 6.0);
    });
  }
}

// ---- determinism across thread counts ------------------------------------------------
// Moderately large float inputs, so that the kernels actually split their work.

constexpr int kBigN = 256, kBigC = 96, kBigOut = 80;

TEST(Kernels, GemmIsBitIdenticalAcrossThreadCounts) {
  std::mt19937_64 rng(29);
  const int M = 256, N = 96, K = 128;
  const auto A = to<float>(random_vec(rng, M * K)), B = to<float>(random_vec(rng, K * N));
  for (bool trans_a : {false, true}) {
    for (bool trans_b : {false, true}) {
      SCOPED_TRACE(testing::Message() << "trans_a=" << trans_a << " trans_b=" << trans_b);
      expect_same_bits_for_1_and_2_threads([&] {
        std::vector<float> C(M * N, 1.0f);
        k::gemm<float>(trans_a, trans_b, M, N, K, 1.0f, A.data(), trans_a ? M : K, B.data(),
                       trans_b ? K : N, 0.5f, C.data(), N);
        return bytes_of(C);
      });
    }
  }
}

// The default of `strata train` (docs/numerics.md): oneDNN threads each product itself. Not
// bit-identical across thread counts, but the same bits run after run at one thread count, and
// the same values as the fixed tiles up to rounding.
TEST(Kernels, LibraryThreadedGemmRepeatsAtAFixedThreadCount) {
  ThreadCountGuard guard;
  struct ModeGuard {
    ~ModeGuard() { k::set_gemm_threading(k::GemmThreading::FixedTiles); }
  } mode_guard;
  std::mt19937_64 rng(41);
  const int M = 512, N = 384, K = 768;
  const auto A = to<float>(random_vec(rng, M * K)), B = to<float>(random_vec(rng, K * N));
  k::set_num_threads(2);
  for (bool trans_a : {false, true}) {
    SCOPED_TRACE(testing::Message() << "trans_a=" << trans_a);
    auto product = [&](k::GemmThreading mode) {
      k::set_gemm_threading(mode);
      std::vector<float> C(M * N, 1.0f);
      k::gemm<float>(trans_a, false, M, N, K, 1.0f, A.data(), trans_a ? M : K, B.data(), N, 0.5f, C.data(), N);
      return C;
    };
    const std::vector<float> first = product(k::GemmThreading::Library);
    for (int repeat = 0; repeat < 3; ++repeat)
      EXPECT_EQ(bytes_of(product(k::GemmThreading::Library)), bytes_of(first)) << "repeat " << repeat;
    const std::vector<float> tiles = product(k::GemmThreading::FixedTiles);
    for (size_t i = 0; i < tiles.size(); ++i)
      ASSERT_NEAR(first[i], tiles[i], 1e-4f * (1.0f + std::fabs(tiles[i]))) << "element " << i;
  }
}

TEST(Kernels, LinearIsBitIdenticalAcrossThreadCounts) {
  std::mt19937_64 rng(30);
  const auto x = to<float>(random_vec(rng, kBigN * kBigC)),
             W = to<float>(random_vec(rng, kBigOut * kBigC)), b = to<float>(random_vec(rng, kBigOut)),
             dy = to<float>(random_vec(rng, kBigN * kBigOut));
  expect_same_bits_for_1_and_2_threads([&] {
    std::vector<float> y(kBigN * kBigOut), pre(kBigN * kBigOut), act(kBigN * kBigOut),
        dx(kBigN * kBigC), dW(kBigOut * kBigC, 0.0f), db(kBigOut, 0.0f);
    k::linear_forward<float>(x.data(), W.data(), b.data(), y.data(), kBigN, kBigC, kBigOut);
    k::linear_act_forward<float>(Activation::GeluTanh, x.data(), W.data(), b.data(), pre.data(),
                                 act.data(), kBigN, kBigC, kBigOut);
    k::linear_backward<float>(x.data(), W.data(), dy.data(), dx.data(), dW.data(), db.data(),
                              kBigN, kBigC, kBigOut);
    return bytes_of(y, pre, act, dx, dW, db);
  });
}

TEST(Kernels, LayerNormIsBitIdenticalAcrossThreadCounts) {
  std::mt19937_64 rng(31);
  const auto x = to<float>(random_vec(rng, kBigN * kBigC, -2, 3)),
             gamma = to<float>(random_vec(rng, kBigC)), beta = to<float>(random_vec(rng, kBigC)),
             dy = to<float>(random_vec(rng, kBigN * kBigC));
  expect_same_bits_for_1_and_2_threads([&] {
    std::vector<float> y(kBigN * kBigC), mean(kBigN), rstd(kBigN), dx(kBigN * kBigC),
        dgamma(kBigC, 0.0f), dbeta(kBigC, 0.0f);
    k::layernorm_forward<float>(x.data(), gamma.data(), beta.data(), y.data(), mean.data(),
                                rstd.data(), kBigN, kBigC, kLnEps);
    k::layernorm_backward<float>(x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(),
                                 dx.data(), dgamma.data(), dbeta.data(), kBigN, kBigC);
    return bytes_of(y, mean, rstd, dx, dgamma, dbeta);
  });
}

TEST(Kernels, ActivationsAreBitIdenticalAcrossThreadCounts) {
  std::mt19937_64 rng(32);
  const size_t n = kBigN * kBigC;
  const auto x = to<float>(random_vec(rng, n, -4, 4)), dy = to<float>(random_vec(rng, n));
  for (Activation a : kAllActivations) {
    SCOPED_TRACE(int(a));
    expect_same_bits_for_1_and_2_threads([&] {
      std::vector<float> y(n), dx(n);
      k::activation_forward<float>(a, x.data(), y.data(), n);
      k::activation_backward<float>(a, x.data(), dy.data(), dx.data(), n);
      return bytes_of(y, dx);
    });
  }
}

TEST(Kernels, AttentionIsBitIdenticalAcrossThreadCounts) {
  // Many small heads with padding, an empty sequence and dropout; then BERT-sized heads
  // (HS = 64, T = 128), whose per-head GEMMs are large enough for BLAS to consider threading.
  // And a causal shape longer than one block of query rows.
  const AttentionShape shapes[] = {
      {4, 32, 64, 4, 0.1f, 99, 2}, {2, 128, 128, 2, 0.0f, 0, 0}, {2, 150, 64, 2, 0.1f, 98, 3, /*causal=*/true}};
  for (const AttentionShape& s : shapes) {
    SCOPED_TRACE(testing::Message() << "B=" << s.B << " T=" << s.T << " C=" << s.C);
    std::mt19937_64 rng(33);
    std::vector<int32_t> mask(s.B * s.T, 1);
    for (int t = s.T - 12; t < s.T; ++t) mask[1 * s.T + t] = 0;            // a padded sequence
    if (s.B > 2) std::fill(mask.begin() + 3 * s.T, mask.end(), 0);        // and an empty one
    const size_t qkv_n = size_t(s.B) * s.T * 3 * s.C, probs_n = size_t(s.B) * s.NH * s.T * s.T,
                 ctx_n = size_t(s.B) * s.T * s.C;
    const auto qkv = to<float>(random_vec(rng, qkv_n, -2, 2)),
               dctx = to<float>(random_vec(rng, ctx_n));
    expect_same_bits_for_1_and_2_threads([&] {
      std::vector<float> probs(probs_n), ctx(ctx_n), dqkv(qkv_n);
      k::attention_forward<float>(s, qkv.data(), mask.data(), probs.data(), ctx.data());
      k::attention_backward<float>(s, qkv.data(), probs.data(), dctx.data(), dqkv.data());
      return bytes_of(probs, ctx, dqkv);
    });
  }
}

TEST(Kernels, EmbeddingIsBitIdenticalAcrossThreadCounts) {
  std::mt19937_64 rng(34);
  const int N = 4096, V = 16, C = kBigC;  // few ids, so each is repeated ~256 times
  const std::vector<int32_t> ids = random_ids(rng, N, 0, V - 1);
  const auto table = to<float>(random_vec(rng, V * C)), dout = to<float>(random_vec(rng, N * C));
  expect_same_bits_for_1_and_2_threads([&] {
    std::vector<float> out(N * C, 0.0f), dtable(V * C, 0.0f);
    k::embedding_forward<float>(ids.data(), table.data(), out.data(), N, C);
    k::embedding_backward<float>(ids.data(), dout.data(), dtable.data(), N, C, /*skip_id=*/5);
    return bytes_of(out, dtable);
  });
}

TEST(Kernels, LossesAreBitIdenticalAcrossThreadCounts) {
  std::mt19937_64 rng(35);
  const int N = kBigN, V = 1000;
  const auto logits = to<float>(random_vec(rng, N * V, -5, 5));
  std::vector<int32_t> labels = random_ids(rng, N, 0, V - 1);
  for (int n = 0; n < N; n += 7) labels[n] = ref::kIgnoreIndex;
  const size_t n = kBigN * kBigC;
  const auto x = to<float>(random_vec(rng, n, -3, 3));
  const Vec target = random_vec(rng, n, 0, 1);
  expect_same_bits_for_1_and_2_threads([&] {
    std::vector<float> dlogits(N * V), dmse(n), dbce(n);
    const Vec losses = {
        k::cross_entropy<float>(logits.data(), labels.data(), dlogits.data(), N, V, N),
        k::mse<float>(x.data(), target.data(), dmse.data(), n, n),
        k::bce_with_logits<float>(x.data(), target.data(), dbce.data(), n, n)};
    return bytes_of(losses, dlogits, dmse, dbce);
  });
}

TEST(Kernels, DropoutOptimizersAndHelpersAreBitIdenticalAcrossThreadCounts) {
  std::mt19937_64 rng(36);
  const size_t n = 300'007;
  const auto x = to<float>(random_vec(rng, n)), g = to<float>(random_vec(rng, n));
  expect_same_bits_for_1_and_2_threads([&] {
    std::vector<float> y(n), dx(n), p = x, m(n, 0.0f), v(n, 0.0f), q = x, buf(n, 0.0f), sum(n);
    k::dropout_forward<float>(x.data(), y.data(), n, 0.1f, 11, 12);
    k::dropout_backward<float>(g.data(), dx.data(), n, 0.1f, 11, 12);
    k::adamw_update<float>(p.data(), g.data(), m.data(), v.data(), n,
                           {1e-3, 0.9, 0.999, 1e-8, 0.01, 1});
    k::sgd_update<float>(q.data(), g.data(), buf.data(), n, {0.1, 0.9, 0.0, 0.01, true, true});
    k::add<float>(x.data(), g.data(), sum.data(), n);
    k::scale<float>(sum.data(), n, 0.3f);
    const Vec sq = {k::sum_squares<float>(x.data(), n)};
    return bytes_of(y, dx, p, m, v, q, buf, sum, sq);
  });
}

}  // namespace
}  // namespace strata
