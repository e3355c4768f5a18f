// Every device op on the GPU against the same op on the CPU (the oracle), in the manner of
// ggml's test-backend-ops: random inputs of several shapes (odd sizes, padding and causal
// masks, dropout), each op run once with the CPU current and once with cuda:0 current, the
// GPU's outputs poisoned with NaN before the run so that an element it does not write fails.
// fp32 error: max |gpu - cpu| / max |cpu| <= 1e-5 per output (TF32 off); dropout masks and
// the embedding gradient must be equal bit for bit. One line per op, shape and output; every
// case runs whatever failed before. Exit status: 0 all passed, 1 some failed, 77 no GPU.
//
//   strata_backend_ops [--small] [--self-test] [filter]
// --small keeps the small shapes only (compute-sanitizer runs 10-100x slower); --self-test
// runs both sides on the CPU (checks this harness where there is no GPU: all must pass); a
// filter runs the cases whose name contains it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_ops.h"
#include "kernels/device.h"
#include "kernels/matmul_precision.h"
#include "kernels/ops.h"

namespace k = strata::kernels;
using k::Activation;
using k::Device;

namespace {

bool g_small = false, g_self_test = false;
std::string g_filter;
int g_failed = 0, g_passed = 0;

// ---- one run of an op on one device ------------------------------------------------------------
// Inputs are copied (to host storage on the CPU, to device memory on the GPU), outputs are
// poisoned (NaN) or initialised (outputs an op adds into); after the run, collect() brings
// the outputs back as doubles, by name.
class Phase {
 public:
  explicit Phase(bool gpu) : gpu_(gpu) {}
  ~Phase() {
    for (auto& [p, bytes] : device_) k::device_free(Device::cuda(0), p, bytes);
  }
  bool gpu() const { return gpu_; }

  template <typename V>
  V* in(const std::vector<V>& h) {
    return static_cast<V*>(place(h.data(), h.size() * sizeof(V)));
  }
  // An output the op writes: poisoned.
  float* out(const std::string& name, size_t n, bool exact = false) {
    std::vector<float> nan(n, std::numeric_limits<float>::quiet_NaN());
    return inout(name, nan, exact);
  }
  // An output the op adds into (or updates in place): starts from `init` on both devices.
  float* inout(const std::string& name, const std::vector<float>& init, bool exact = false) {
    float* p = in(init);
    outs_.push_back({name, p, init.size(), false, exact});
    return p;
  }
  double* out_double(const std::string& name, size_t n) {
    std::vector<double> nan(n, std::numeric_limits<double>::quiet_NaN());
    double* p = in(nan);
    outs_.push_back({name, p, n, true, false});
    return p;
  }
  // Scratch the op needs whose content is the device's own (attention's saved state).
  float* scratch(size_t n) {
    std::vector<float> nan(n, std::numeric_limits<float>::quiet_NaN());
    return in(nan);
  }
  void scalar(const std::string& name, double v) { results_[name] = {v}; }

  void collect() {
    for (const Out& o : outs_) {
      std::vector<double>& r = results_[o.name];
      r.resize(o.n);
      if (o.is_double) {
        std::vector<double> h(o.n);
        copy_back(h.data(), o.ptr, o.n * sizeof(double));
        for (size_t i = 0; i < o.n; ++i) r[i] = h[i];
      } else {
        std::vector<float> h(o.n);
        copy_back(h.data(), o.ptr, o.n * sizeof(float));
        for (size_t i = 0; i < o.n; ++i) r[i] = h[i];
        bits_[o.name] = h;
      }
      exact_[o.name] = o.exact;
    }
  }
  const std::map<std::string, std::vector<double>>& results() const { return results_; }
  const std::map<std::string, std::vector<float>>& bits() const { return bits_; }
  bool exact(const std::string& name) const {
    auto it = exact_.find(name);
    return it != exact_.end() && it->second;
  }

 private:
  struct Out {
    std::string name;
    void* ptr;
    size_t n;
    bool is_double, exact;
  };
  void* place(const void* src, size_t bytes) {
    const size_t b = bytes ? bytes : 1;
    if (!gpu_) {
      host_.emplace_back(b);
      std::memcpy(host_.back().data(), src, bytes);
      return host_.back().data();
    }
    void* p = k::device_alloc(Device::cuda(0), b);
    device_.push_back({p, b});
    k::copy_bytes(p, Device::cuda(0), src, Device::cpu(), bytes);
    return p;
  }
  void copy_back(void* dst, const void* src, size_t bytes) {
    if (gpu_) k::copy_bytes(dst, Device::cpu(), src, Device::cuda(0), bytes);
    else std::memcpy(dst, src, bytes);
  }

  bool gpu_;
  std::deque<std::vector<unsigned char>> host_;
  std::vector<std::pair<void*, size_t>> device_;
  std::vector<Out> outs_;
  std::map<std::string, std::vector<double>> results_;
  std::map<std::string, std::vector<float>> bits_;
  std::map<std::string, bool> exact_;
};

// Runs body on the CPU and on the GPU and compares every output. big: skipped under --small.
void check(const std::string& name, bool big, const std::function<void(Phase&)>& body, double tol = 1e-5) {
  if (!g_filter.empty() && name.find(g_filter) == std::string::npos) return;
  if (big && g_small) return;
  Phase cpu(false), gpu(!g_self_test);
  std::string error;
  try {
    k::use_device(Device::cpu());
    body(cpu);
    cpu.collect();
    if (!g_self_test) k::use_device(Device::cuda(0));
    body(gpu);
    gpu.collect();
    k::synchronize();
  } catch (const std::exception& e) {
    error = e.what();
  }
  k::use_device(Device::cpu());
  if (!error.empty()) {
    std::printf("%-70s %-10s %12s  FAIL (%s)\n", name.c_str(), "", "", error.c_str());
    ++g_failed;
    return;
  }
  for (const auto& [out, ref] : cpu.results()) {
    const auto it = gpu.results().find(out);
    const std::vector<double>& got = it->second;
    double max_ref = 0, max_diff = 0;
    bool nan = false, same_bits = true;
    for (size_t i = 0; i < ref.size(); ++i) {
      max_ref = std::max(max_ref, std::fabs(ref[i]));
      const double d = std::fabs(got[i] - ref[i]);
      if (std::isnan(got[i]) != std::isnan(ref[i]) || (std::isnan(d) && !std::isnan(ref[i]))) nan = true;
      else if (!std::isnan(d)) max_diff = std::max(max_diff, d);
    }
    const auto cb = cpu.bits().find(out), gb = gpu.bits().find(out);
    if (cb != cpu.bits().end())
      same_bits = std::memcmp(cb->second.data(), gb->second.data(), cb->second.size() * sizeof(float)) == 0;
    else
      for (size_t i = 0; i < ref.size(); ++i) same_bits = same_bits && ref[i] == got[i];
    const double err = max_ref > 0 ? max_diff / max_ref : max_diff;
    const bool exact = cpu.exact(out);
    const bool pass = !nan && (exact ? same_bits : err <= tol);
    char e[64];
    if (nan) std::snprintf(e, sizeof e, "NaN/unwritten");
    else std::snprintf(e, sizeof e, "%.3e", err);
    std::printf("%-70s %-10s %12s  %s%s%s\n", name.c_str(), out.c_str(), e, pass ? "PASS" : "FAIL",
                exact ? (same_bits ? " (bitwise, required)" : " (NOT bitwise, required)") : "",
                !exact && same_bits && pass ? " (bitwise)" : "");
    (pass ? g_passed : g_failed)++;
  }
}

// ---- inputs ----------------------------------------------------------------------------------
std::mt19937_64 g_rng(1234);

std::vector<float> randn(size_t n, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(g_rng);
  return v;
}
std::vector<int32_t> randint(size_t n, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = d(g_rng);
  return v;
}
std::string shape(std::initializer_list<std::pair<const char*, long>> dims) {
  std::string s;
  for (const auto& [n, v] : dims) s += std::string(s.empty() ? "" : ",") + n + "=" + std::to_string(v);
  return s;
}
const char* act_name(Activation a) {
  switch (a) {
    case Activation::GeluErf: return "gelu";
    case Activation::GeluTanh: return "gelu_tanh";
    case Activation::Relu: return "relu";
    case Activation::Silu: return "silu";
    case Activation::Tanh: return "tanh";
  }
  return "?";
}
const Activation kActivations[] = {Activation::GeluErf, Activation::GeluTanh, Activation::Relu, Activation::Silu,
                                   Activation::Tanh};

// ---- the cases ---------------------------------------------------------------------------------
void gemm_cases() {
  struct S {
    int M, N, K;
  };
  for (const S s : {S{1, 1, 1}, S{7, 13, 5}, S{64, 96, 128}, S{129, 67, 255}, S{512, 768, 1024}})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (const float beta : {0.0f, 0.7f}) {
          const int pad = s.M == 7 ? 3 : 0;  // leading dimensions past the minimum
          const int lda = (ta ? s.M : s.K) + pad, ldb = (tb ? s.K : s.N) + pad, ldc = s.N + pad;
          const auto A = randn(static_cast<size_t>(ta ? s.K : s.M) * lda);
          const auto B = randn(static_cast<size_t>(tb ? s.N : s.K) * ldb);
          const auto C0 = randn(static_cast<size_t>(s.M) * ldc);
          const bool big = static_cast<long>(s.M) * s.N * s.K > 1000000;
          check("gemm " + std::string(ta ? "T" : "N") + (tb ? "T" : "N") + " beta=" + (beta == 0 ? "0" : "0.7") + " " +
                    shape({{"M", s.M}, {"N", s.N}, {"K", s.K}}) + (pad ? " ld+3" : ""),
                big, [&](Phase& p) {
                  // beta = 0: C is poisoned (an unread input); NaN stays in the padding on both devices
                  float* C = p.inout("C", beta == 0 ? std::vector<float>(C0.size(), NAN) : C0);
                  k::gemm<float>(ta, tb, s.M, s.N, s.K, 0.5f, p.in(A), lda, p.in(B), ldb, beta, C, ldc);
                });
        }
  // K = 0: C = beta C.
  const auto C0 = randn(12), A = randn(1), B = randn(4);
  check("gemm NN K=0 beta=0.7", false, [&](Phase& p) {
    k::gemm<float>(false, false, 3, 4, 0, 1.0f, p.in(A), 1, p.in(B), 4, 0.7f, p.inout("C", C0), 4);
  });
}

// bf16 / fp16 products (kernels/matmul_precision.h): the GPU's cuBLASLt products of rounded
// operands against the CPU's emulated path, which multiplies the same rounded values and sums
// them in another order (so within fp32's summation error of the products' scale); attention,
// whose GPU kernels read q, k, v rounded but keep probabilities and gradients in fp32 where the
// CPU rounds them as product inputs too, within the type's rounding (bf16 2^-9, fp16 2^-12).
void half_product_cases() {
  for (const k::MatmulPrecision prec : {k::MatmulPrecision::Bf16, k::MatmulPrecision::Fp16}) {
    k::set_matmul_precision(prec, k::MatmulPath::Emulated);
    const std::string pn = std::string(k::precision_name(prec)) + " ";
    struct S {
      int M, N, K;
    };
    for (const S s : {S{7, 13, 5}, S{129, 67, 255}, S{512, 768, 1024}})
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb) {
          const int lda = (ta ? s.M : s.K) + 3, ldb = (tb ? s.K : s.N) + 3, ldc = s.N;
          const auto A = randn(static_cast<size_t>(ta ? s.K : s.M) * lda);
          const auto B = randn(static_cast<size_t>(tb ? s.N : s.K) * ldb);
          const auto C0 = randn(static_cast<size_t>(s.M) * ldc);
          check(pn + "gemm " + std::string(ta ? "T" : "N") + (tb ? "T" : "N") + " beta=0.7 " +
                    shape({{"M", s.M}, {"N", s.N}, {"K", s.K}}) + " ld+3",
                s.M * s.N > 100000, [&](Phase& p) {
                  k::gemm<float>(ta, tb, s.M, s.N, s.K, 0.5f, p.in(A), lda, p.in(B), ldb, 0.7f, p.inout("C", C0), ldc);
                });
        }
    const int N = 130, in = 256, out = 384;
    const auto x = randn(static_cast<size_t>(N) * in), dy = randn(static_cast<size_t>(N) * out);
    const auto W = randn(static_cast<size_t>(in) * out, 0.1f), b = randn(out), dW0 = randn(W.size()), db0 = randn(out);
    check(pn + "linear_forward+backward N=130,in=256,out=384", false, [&](Phase& p) {
      k::linear_forward<float>(p.in(x), p.in(W), p.in(b), p.out("y", static_cast<size_t>(N) * out), N, in, out);
      k::linear_backward<float>(p.in(x), p.in(W), p.in(dy), p.out("dx", x.size()), p.inout("dW", dW0),
                                p.inout("db", db0), N, in, out);
    });
    for (int epi = 0; epi < 2; ++epi)
      check(pn + "linear_act_forward gelu_tanh N=130,in=256,out=384" + (epi ? " (cuBLASLt GELU epilogue)" : ""), false,
            [&](Phase& p) {
              if (p.gpu()) k::cuda::set_gelu_epilogue(epi == 1);
              const size_t n = static_cast<size_t>(N) * out;
              k::linear_act_forward<float>(Activation::GeluTanh, p.in(x), p.in(W), p.in(b), p.out("pre", n),
                                           p.out("y", n), N, in, out);
              if (p.gpu()) k::cuda::set_gelu_epilogue(true);
            });
    const double attention_tol = prec == k::MatmulPrecision::Bf16 ? 2e-2 : 3e-3;
    for (const bool causal : {false, true}) {
      const k::AttentionShape a{2, 65, 128, 2, 0.1f, 99, 5, causal, true, 0, 0};
      const size_t rows = 2 * 65;
      const auto qkv = randn(rows * 3 * 128), dctx = randn(rows * 128);
      const std::vector<int32_t> mask(rows, 1);
      check(pn + "attention_forward+backward B=2,T=65,C=128,NH=2" + (causal ? " causal" : ""), false,
            [&](Phase& p) {
              const float* q = p.in(qkv);
              const int32_t* m = p.in(mask);
              float* saved = p.scratch(k::attention_saved_size(a));
              k::attention_forward<float>(a, q, m, saved, p.out("ctx", rows * 128));
              k::attention_backward<float>(a, q, saved, p.in(dctx), p.out("dqkv", rows * 3 * 128));
            },
            attention_tol);
    }
  }
  k::set_matmul_precision(k::MatmulPrecision::Fp32);
}

void linear_cases() {
  struct S {
    int N, in, out;
  };
  for (const S s : {S{1, 3, 5}, S{37, 64, 96}, S{130, 257, 129}, S{512, 768, 3072}}) {
    const bool big = static_cast<long>(s.N) * s.in * s.out > 1000000;
    const auto x = randn(static_cast<size_t>(s.N) * s.in), dy = randn(static_cast<size_t>(s.N) * s.out);
    const auto W = randn(static_cast<size_t>(s.in) * s.out, 0.1f), b = randn(s.out + 1);
    const auto dW0 = randn(W.size()), db0 = randn(s.out);
    const std::string sh = shape({{"N", s.N}, {"in", s.in}, {"out", s.out}});
    for (int conv = 0; conv < 2; ++conv) {
      const std::string op = conv ? "conv1d" : "linear";
      auto fwd = conv ? k::conv1d_forward<float> : k::linear_forward<float>;
      auto bwd = conv ? k::conv1d_backward<float> : k::linear_backward<float>;
      for (int bias = 0; bias < 3; ++bias) {  // none, aligned, at an odd offset (a view into a flat buffer)
        check(op + "_forward " + sh + (bias == 0 ? " no bias" : bias == 1 ? " bias" : " bias+1 (misaligned)"), big,
              [&](Phase& p) {
                const float* bp = bias ? p.in(b) + (bias == 2 ? 1 : 0) : nullptr;
                fwd(p.in(x), p.in(W), bp, p.out("y", static_cast<size_t>(s.N) * s.out), s.N, s.in, s.out);
              });
      }
      for (int with_dx = 0; with_dx < 2; ++with_dx)
        for (int with_db = 0; with_db < 2; ++with_db)
          check(op + "_backward " + sh + (with_dx ? " dx" : "") + (with_db ? " db" : ""), big, [&](Phase& p) {
            float* dx = with_dx ? p.out("dx", x.size()) : nullptr;
            float* db = with_db ? p.inout("db", db0) : nullptr;
            bwd(p.in(x), p.in(W), p.in(dy), dx, p.inout("dW", dW0), db, s.N, s.in, s.out);
          });
    }
    // dx aliasing x (the contract allows it: dW is computed first).
    check("linear_backward " + sh + " dx aliases x", big, [&](Phase& p) {
      float* xx = p.inout("dx", x);
      k::linear_backward<float>(xx, p.in(W), p.in(dy), xx, p.inout("dW", dW0), p.inout("db", db0), s.N, s.in, s.out);
    });
    for (const Activation a : kActivations)
      for (int epi = 0; epi < (a == Activation::GeluTanh ? 2 : 1); ++epi)
        for (int bias = 0; bias < 2; ++bias)
          check("linear_act_forward " + std::string(act_name(a)) + " " + sh + (bias ? " bias" : " no bias") +
                    (a == Activation::GeluTanh ? (epi ? " (cuBLASLt GELU epilogue)" : " (no epilogue)") : ""),
                big, [&](Phase& p) {
                  if (p.gpu()) k::cuda::set_gelu_epilogue(epi == 1);
                  const size_t n = static_cast<size_t>(s.N) * s.out;
                  k::linear_act_forward<float>(a, p.in(x), p.in(W), bias ? p.in(b) : nullptr, p.out("pre", n),
                                               p.out("y", n), s.N, s.in, s.out);
                  if (p.gpu()) k::cuda::set_gelu_epilogue(true);
                });
  }
}

void layernorm_cases() {
  struct S {
    int N, C;
  };
  for (const S s : {S{1, 1}, S{3, 7}, S{64, 768}, S{33, 1025}, S{4096, 768}}) {
    const bool big = static_cast<long>(s.N) * s.C > 1000000;
    const size_t n = static_cast<size_t>(s.N) * s.C;
    auto x = randn(n, 2.0f);
    for (float& v : x) v += 0.5f;
    const auto gamma = randn(s.C), beta = randn(s.C), dy = randn(n);
    const auto dg0 = randn(s.C), db0 = randn(s.C);
    const std::string sh = shape({{"N", s.N}, {"C", s.C}});
    check("layernorm_forward+apply " + sh, big, [&](Phase& p) {
      float* y = p.out("y", n);
      float* mean = p.out("mean", s.N);
      float* rstd = p.out("rstd", s.N);
      k::layernorm_forward<float>(p.in(x), p.in(gamma), p.in(beta), y, mean, rstd, s.N, s.C, 1e-5);
      float* y2 = p.out("y_apply", n);
      k::layernorm_apply<float>(p.in(x), p.in(gamma), p.in(beta), mean, rstd, y2, s.N, s.C);
    });
    check("layernorm_backward " + sh, big, [&](Phase& p) {
      float* mean = p.scratch(s.N);
      float* rstd = p.scratch(s.N);
      float* y = p.scratch(n);
      k::layernorm_forward<float>(p.in(x), p.in(gamma), p.in(beta), y, mean, rstd, s.N, s.C, 1e-5);
      k::layernorm_backward<float>(p.in(x), p.in(gamma), mean, rstd, p.in(dy), p.out("dx", n), p.inout("dgamma", dg0),
                                   p.inout("dbeta", db0), s.N, s.C);
    });
  }
  for (const S s : {S{1, 1}, S{3, 7}, S{64, 512}, S{33, 1025}}) {
    const size_t n = static_cast<size_t>(s.N) * s.C;
    const auto x = randn(n, 2.0f), gamma = randn(s.C), dy = randn(n), dg0 = randn(s.C);
    const std::string sh = shape({{"N", s.N}, {"C", s.C}});
    check("rmsnorm_forward " + sh, false, [&](Phase& p) {
      k::rmsnorm_forward<float>(p.in(x), p.in(gamma), p.out("y", n), p.out("rstd", s.N), s.N, s.C, 1e-6);
    });
    check("rmsnorm_backward " + sh, false, [&](Phase& p) {
      float* rstd = p.scratch(s.N);
      k::rmsnorm_forward<float>(p.in(x), p.in(gamma), p.scratch(n), rstd, s.N, s.C, 1e-6);
      k::rmsnorm_backward<float>(p.in(x), p.in(gamma), rstd, p.in(dy), p.out("dx", n), p.inout("dgamma", dg0), s.N,
                                 s.C);
    });
  }
  // layernorm_apply gives the forward's bits on the GPU itself.
  check("layernorm_apply == forward, bitwise, on each device N=77,C=300", false, [&](Phase& p) {
    const int N = 77, C = 300;
    const auto x = randn(static_cast<size_t>(N) * C), g = randn(C), b = randn(C);
    float* y = p.scratch(x.size());
    float* mean = p.scratch(N);
    float* rstd = p.scratch(N);
    k::layernorm_forward<float>(p.in(x), p.in(g), p.in(b), y, mean, rstd, N, C, 1e-12);
    float* y2 = p.scratch(x.size());
    k::layernorm_apply<float>(p.in(x), p.in(g), p.in(b), mean, rstd, y2, N, C);
    float* diff = p.out("y_apply-y", x.size(), true);
    k::scale<float>(y, x.size(), -1.0f);
    k::add<float>(y2, y, diff, x.size());  // exactly 0 everywhere iff the bits agree
  });
}

void activation_cases() {
  for (const size_t n : {size_t{1}, size_t{1000}, size_t{100003}, size_t{4} << 20}) {
    const bool big = n > 200000;
    const auto x = randn(n, 3.0f), dy = randn(n);
    for (const Activation a : kActivations) {
      const std::string sh = std::string(act_name(a)) + " n=" + std::to_string(n);
      check("activation_forward " + sh, big, [&](Phase& p) { k::activation_forward<float>(a, p.in(x), p.out("y", n), n); });
      check("activation_backward " + sh, big,
            [&](Phase& p) { k::activation_backward<float>(a, p.in(x), p.in(dy), p.out("dx", n), n); });
      check("activation_backward " + sh + " dx aliases dy", big, [&](Phase& p) {
        float* d = p.inout("dx", dy);
        k::activation_backward<float>(a, p.in(x), d, d, n);
      });
      check("activation_value_and_grad " + sh + " g aliases x", big, [&](Phase& p) {
        float* g = p.inout("g", x);
        k::activation_value_and_grad<float>(a, g, p.out("y", n), g, n);
      });
    }
  }
}

void dropout_cases() {
  for (const size_t n : {size_t{1}, size_t{1000}, size_t{(1u << 20) + 3}})
    for (const float prob : {0.0f, 0.1f, 0.5f})
      for (const uint64_t seed : {uint64_t{0}, uint64_t{42}}) {
        const auto x = randn(n);
        const std::string sh = "n=" + std::to_string(n) + " p=" + std::to_string(prob).substr(0, 3) +
                               " seed=" + std::to_string(seed);
        check("dropout_forward " + sh, n > 200000,
              [&](Phase& p) { k::dropout_forward<float>(p.in(x), p.out("y", n, true), n, prob, seed, 7); });
        check("dropout_backward (in place) " + sh, n > 200000, [&](Phase& p) {
          float* d = p.inout("dx", x, true);
          k::dropout_backward<float>(d, d, n, prob, seed, 3);
        });
      }
  // A block of columns of a larger tensor (a tensor-parallel rank's heads or FFN columns).
  for (const float prob : {0.0f, 0.1f}) {
    const size_t rows = 37, cols = 300, ld = 900, first = 300;
    const auto x = randn(rows * cols);
    check("dropout_block rows=37 cols=300 ld=900 first=300 p=" + std::to_string(prob).substr(0, 3), false,
          [&](Phase& p) {
            k::dropout_block<float>(p.in(x), p.out("y", rows * cols, true), rows, cols, ld, first, prob, 5, 9);
          });
  }
}

void attention_cases() {
  struct S {
    int B, T, C, NH;
    bool causal;
    float p;
    int mask;  // 0 all ones, 1 padding suffixes, 2 one sequence fully masked, 3 random holes
    bool scale = true;
    int heads_total = 0, head0 = 0;
  };
  const std::vector<S> shapes = {
      {1, 1, 8, 1, false, 0.0f, 0},     {2, 7, 12, 3, false, 0.0f, 1},      {2, 7, 12, 3, true, 0.0f, 1},
      {2, 33, 64, 2, false, 0.1f, 1},   {2, 33, 64, 2, true, 0.1f, 2},      {3, 65, 128, 2, false, 0.0f, 3},
      {3, 65, 128, 2, true, 0.2f, 3},   {1, 50, 40, 2, false, 0.0f, 2},     {2, 130, 192, 3, true, 0.1f, 1, false},
      {2, 64, 256, 2, false, 0.1f, 1},  {2, 31, 48, 1, false, 0.1f, 1, true, 4, 2},
      {1, 40, 96, 1, true, 0.0f, 0},    {2, 20, 512, 2, false, 0.1f, 1},    {4, 256, 768, 12, true, 0.1f, 1},
      {8, 128, 768, 12, false, 0.1f, 1},
  };
  for (const S& s : shapes) {
    const bool big = static_cast<long>(s.B) * s.T * s.T * s.C > 4000000;
    const size_t rows = static_cast<size_t>(s.B) * s.T;
    const auto qkv = randn(rows * 3 * s.C), dctx = randn(rows * s.C);
    std::vector<int32_t> mask(rows, 1);
    for (int b = 0; b < s.B; ++b) {
      const int valid = s.mask == 1 ? std::max(1, s.T - (b * 5) % (s.T + 1)) : s.T;
      for (int t = 0; t < s.T; ++t) {
        int32_t& m = mask[static_cast<size_t>(b) * s.T + t];
        if (s.mask == 1) m = t < valid;
        if (s.mask == 2 && b == s.B - 1) m = 0;
        if (s.mask == 3) m = (t * 7 + b) % 3 != 0;
      }
    }
    k::AttentionShape a{s.B, s.T, s.C, s.NH, s.p, 99, 5, s.causal, s.scale, s.heads_total, s.head0};
    const std::string sh = shape({{"B", s.B}, {"T", s.T}, {"C", s.C}, {"NH", s.NH}}) + (s.causal ? " causal" : "") +
                           " p=" + std::to_string(s.p).substr(0, 3) + " mask=" +
                           (s.mask == 0 ? "none" : s.mask == 1 ? "padding" : s.mask == 2 ? "empty-row" : "holes") +
                           (s.scale ? "" : " unscaled") + (s.heads_total ? " heads 2..2 of 4" : "");
    check("attention_forward+backward " + sh, big, [&](Phase& p) {
      const float* q = p.in(qkv);
      const int32_t* m = p.in(mask);
      float* saved = p.scratch(k::attention_saved_size(a));
      k::attention_forward<float>(a, q, m, saved, p.out("ctx", rows * s.C));
      k::attention_backward<float>(a, q, saved, p.in(dctx), p.out("dqkv", rows * 3 * s.C));
    });
    if (!s.causal && s.p == 0.0f)
      check("attention_first_query_forward " + sh, big, [&](Phase& p) {
        k::attention_first_query_forward<float>(a, p.in(qkv), p.in(mask), p.out("probs", static_cast<size_t>(s.B) * s.NH * s.T),
                                                p.out("ctx", static_cast<size_t>(s.B) * s.C));
      });
  }
  struct CS {
    int B, Tq, Tk, ldt, C, NH;
  };
  for (const CS s : {CS{1, 1, 1, 4, 8, 1}, CS{2, 1, 17, 20, 12, 3}, CS{2, 3, 40, 40, 64, 2}, CS{3, 5, 130, 160, 768, 12}}) {
    const int ldq = 3 * s.C;
    const auto q = randn(static_cast<size_t>(s.B) * s.Tq * ldq);
    const auto kv = randn(static_cast<size_t>(s.B) * s.ldt * s.C), vv = randn(kv.size());
    const k::CachedAttentionShape cs{s.B, s.Tq, s.Tk, s.ldt, s.C, s.NH, true};
    check("attention_cached_forward " + shape({{"B", s.B}, {"Tq", s.Tq}, {"Tk", s.Tk}, {"ldt", s.ldt}, {"C", s.C}, {"NH", s.NH}}),
          false, [&](Phase& p) {
            k::attention_cached_forward<float>(cs, p.in(q), ldq, p.in(kv), p.in(vv),
                                               p.out("scores", static_cast<size_t>(s.B) * s.NH * s.Tq * s.Tk),
                                               p.out("ctx", static_cast<size_t>(s.B) * s.Tq * s.C));
          });
  }
}

// The softmax of separately computed scores (encoder-decoder attention, T5's position bias):
// masks with holes and an empty row, causal with an offset first query, with and without a bias.
void scores_softmax_cases() {
  struct S {
    int B, NH, Tq, Tk;
    bool causal, bias;
    int first_query;
  };
  for (const S s : {S{1, 1, 1, 1, false, false, 0}, S{2, 3, 7, 11, false, true, 0}, S{3, 4, 5, 9, true, true, 4},
                    S{2, 8, 64, 300, false, true, 0}, S{4, 12, 128, 128, true, false, 0}}) {
    const size_t n = static_cast<size_t>(s.B) * s.NH * s.Tq * s.Tk;
    const auto scores = randn(n, 3.0f), bias = randn(static_cast<size_t>(s.Tq) * s.Tk * s.NH), g = randn(n);
    const auto dbias0 = randn(bias.size());
    std::vector<int32_t> mask(static_cast<size_t>(s.B) * s.Tk, 1);
    for (int b = 0; b < s.B; ++b)
      for (int j = 0; j < s.Tk; ++j) mask[static_cast<size_t>(b) * s.Tk + j] = b == 1 ? 0 : (j * 5 + b) % 4 != 0;
    const std::string sh = shape({{"B", s.B}, {"NH", s.NH}, {"Tq", s.Tq}, {"Tk", s.Tk}}) + (s.causal ? " causal" : "") +
                           (s.bias ? " bias" : "") + " first_query=" + std::to_string(s.first_query);
    check("scores_softmax+backward " + sh, n > 1000000, [&](Phase& p) {
      float* P = p.inout("P", scores);
      k::scores_softmax<float>(P, s.bias ? p.in(bias) : nullptr, p.in(mask), s.B, s.NH, s.Tq, s.Tk, s.causal,
                               s.first_query);
      k::scores_softmax_backward<float>(P, p.inout("dS", g), s.bias ? p.inout("dbias", dbias0) : nullptr, s.B, s.NH,
                                        s.Tq, s.Tk, 0.125f);
    });
  }
}

void embedding_cases() {
  struct S {
    int N, V, C, skip;
  };
  for (const S s : {S{1, 1, 1, -1}, S{1000, 50, 33, 0}, S{5000, 7, 768, 3}, S{16384, 50257, 64, -1}}) {
    const bool big = static_cast<long>(s.N) * s.C > 1000000;
    const auto ids = randint(s.N, 0, s.V - 1);
    const auto table = randn(static_cast<size_t>(s.V) * s.C), dout = randn(static_cast<size_t>(s.N) * s.C);
    const auto out0 = randn(static_cast<size_t>(s.N) * s.C), dtable0 = randn(table.size());
    const std::string sh = shape({{"N", s.N}, {"V", s.V}, {"C", s.C}, {"skip", s.skip}});
    check("embedding_forward " + sh, big,
          [&](Phase& p) { k::embedding_forward<float>(p.in(ids), p.in(table), p.inout("out", out0, true), s.N, s.C); });
    check("embedding_backward " + sh, big, [&](Phase& p) {
      k::embedding_backward<float>(p.in(ids), p.in(dout), p.inout("dtable", dtable0, true), s.N, s.C, s.skip);
    });
  }
}

void loss_cases() {
  struct S {
    int N, V;
  };
  for (const S s : {S{1, 1}, S{5, 7}, S{64, 1000}, S{8, 50257}, S{512, 30522}}) {
    const bool big = static_cast<long>(s.N) * s.V > 1000000;
    const auto logits = randn(static_cast<size_t>(s.N) * s.V, 3.0f);
    auto labels = randint(s.N, 0, s.V - 1);
    for (int n = 1; n < s.N; n += 3) labels[n] = -100;
    const double norm = std::max(1, s.N - s.N / 3);
    const std::string sh = shape({{"N", s.N}, {"V", s.V}});
    for (int grad = 0; grad < 2; ++grad)
      check("cross_entropy " + sh + (grad ? " dlogits" : " loss only"), big, [&](Phase& p) {
        float* d = grad ? p.out("dlogits", logits.size()) : nullptr;
        p.scalar("loss", k::cross_entropy<float>(p.in(logits), p.in(labels), d, s.N, s.V, norm));
      });
    // The vocabulary-parallel pieces on a slice [v0, v0 + V/2) of a wider vocabulary.
    const int V = std::max(1, s.V / 2), v0 = s.V / 3;
    std::vector<float> slice(static_cast<size_t>(s.N) * V);
    for (int n = 0; n < s.N; ++n)
      for (int v = 0; v < V; ++v) slice[static_cast<size_t>(n) * V + v] = logits[static_cast<size_t>(n) * s.V + v];
    check("ce_slice_row_max+exp+grad " + shape({{"N", s.N}, {"V", V}, {"v0", v0}}), big, [&](Phase& p) {
      const float* x = p.in(slice);
      const int32_t* l = p.in(labels);
      float* mx = p.out("mx", s.N);
      k::ce_slice_row_max<float>(x, s.N, V, mx);
      float* e = p.out("e", slice.size());
      double* sumexp = p.out_double("sumexp", s.N);
      k::ce_slice_exp<float>(x, l, mx, s.N, V, v0, e, sumexp, p.out_double("target", s.N));
      float* g = p.out("grad", slice.size());
      k::copy_bytes(g, k::current_device(), e, k::current_device(), slice.size() * sizeof(float));
      k::ce_slice_grad<float>(g, l, sumexp, s.N, V, v0, norm);
    });
  }
  for (const size_t n : {size_t{1}, size_t{1000}, size_t{100001}}) {
    const auto x = randn(n, 2.0f);
    std::vector<double> target(n), binary(n);
    for (size_t i = 0; i < n; ++i) {
      target[i] = 0.5 * x[i] + 0.3 * std::sin(static_cast<double>(i));
      binary[i] = (i * 2654435761u) % 3 == 0 ? 1.0 : 0.0;
    }
    for (int grad = 0; grad < 2; ++grad) {
      const std::string sh = "n=" + std::to_string(n) + (grad ? " dx" : " loss only");
      check("mse " + sh, false, [&](Phase& p) {
        float* dx = grad ? p.out("dx", n) : nullptr;
        p.scalar("loss", k::mse<float>(p.in(x), p.in(target), dx, n, 7.0));
      });
      check("bce_with_logits " + sh, false, [&](Phase& p) {
        float* dx = grad ? p.out("dx", n) : nullptr;
        p.scalar("loss", k::bce_with_logits<float>(p.in(x), p.in(binary), dx, n, 3.0));
      });
    }
  }
}

void optimizer_cases() {
  for (const size_t n : {size_t{1}, size_t{1000}, size_t{1000003}}) {
    const bool big = n > 200000;
    const auto p0 = randn(n), g = randn(n, 0.1f), m0 = randn(n, 0.01f);
    auto v0 = randn(n, 0.01f);
    for (float& v : v0) v = v * v;
    for (const int64_t step : {int64_t{1}, int64_t{1000}}) {
      const k::AdamWParams a{1e-3, 0.9, 0.999, 1e-8, 0.01, step};
      check("adamw_update n=" + std::to_string(n) + " step=" + std::to_string(step), big, [&](Phase& p) {
        k::adamw_update<float>(p.inout("p", p0), p.in(g), p.inout("m", m0), p.inout("v", v0), n, a);
      });
    }
    struct V {
      double momentum, dampening, wd;
      bool nesterov, first;
    };
    for (const V v : {V{0, 0, 0, false, false}, V{0.9, 0, 0.01, false, true}, V{0.9, 0.1, 0.01, false, false},
                      V{0.9, 0, 0.0, true, false}}) {
      const k::SGDParams sp{0.01, v.momentum, v.dampening, v.wd, v.nesterov, v.first};
      check("sgd_update n=" + std::to_string(n) + " momentum=" + std::to_string(v.momentum).substr(0, 3) +
                (v.nesterov ? " nesterov" : "") + (v.first ? " first" : "") + (v.dampening ? " damp" : ""),
            big, [&](Phase& p) { k::sgd_update<float>(p.inout("p", p0), p.in(g), p.inout("buf", m0), n, sp); });
    }
  }
}

void helper_cases() {
  for (const size_t n : {size_t{1}, size_t{1000}, size_t{(1u << 22) + 5}}) {
    const bool big = n > 200000;
    const auto x = randn(n), y = randn(n);
    const std::string sh = "n=" + std::to_string(n);
    check("sum_squares " + sh, big, [&](Phase& p) { p.scalar("sum", k::sum_squares<float>(p.in(x), n)); });
    check("scale " + sh, big, [&](Phase& p) { k::scale<float>(p.inout("x", x), n, -0.37f); });
    check("add " + sh + " y aliases a", big, [&](Phase& p) {
      float* a = p.inout("y", x);
      k::add<float>(a, p.in(y), a, n);
    });
    check("mul " + sh, big, [&](Phase& p) { k::mul<float>(p.in(x), p.in(y), p.out("y", n), n); });
  }
}

// The data-movement ops: the GPU's copies (kernels::cuda::) against plain loops, which state
// what each op does.
void data_cases() {
  for (const int rows : {1, 37, 1000}) {
    const int cols = rows == 1 ? 1 : 129;
    const bool big = false;
    const size_t n = static_cast<size_t>(rows) * cols;
    const auto x = randn(n), dst0 = randn(n + 7 * rows);
    auto index = randint(rows, -1, rows - 1);
    const std::string sh = shape({{"rows", rows}, {"cols", cols}});
    check("fill+copy " + sh, big, [&](Phase& p) {
      float* a = p.out("fill", n, true);
      float* b = p.out("copy", n, true);
      if (p.gpu()) {
        k::cuda::fill(a, n, 2.5f);
        k::cuda::copy(p.in(x), b, n);
      } else {
        for (size_t i = 0; i < n; ++i) a[i] = 2.5f, b[i] = x[i];
      }
    });
    check("copy_rows ld_src=cols ld_dst=cols+7 " + sh, big, [&](Phase& p) {
      float* d = p.inout("dst", dst0, true);
      const float* s = p.in(x);
      if (p.gpu()) k::cuda::copy_rows(s, cols, d, cols + 7, rows, cols);
      else
        for (int r = 0; r < rows; ++r)
          for (int c = 0; c < cols; ++c) d[static_cast<size_t>(r) * (cols + 7) + c] = s[static_cast<size_t>(r) * cols + c];
    });
    // gather: any indices (negative skipped); scatter: distinct non-negative ones (a permutation).
    std::vector<int32_t> perm(rows);
    for (int r = 0; r < rows; ++r) perm[r] = (r * 7 + 3) % rows == r && r % 2 ? -1 : (r * 7 + 3) % rows;
    if (rows % 7 == 0) perm.assign(rows, -1);
    check("gather_rows+scatter_rows " + sh, big, [&](Phase& p) {
      float* g = p.inout("gather", std::vector<float>(dst0.begin(), dst0.begin() + n), true);
      float* sc = p.inout("scatter", std::vector<float>(dst0.begin(), dst0.begin() + n), true);
      const float* s = p.in(x);
      if (p.gpu()) {
        k::cuda::gather_rows(s, p.in(index), g, rows, cols);
        k::cuda::scatter_rows(s, p.in(perm), sc, rows, cols);
      } else {
        for (int r = 0; r < rows; ++r)
          for (int c = 0; c < cols; ++c) {
            if (index[r] >= 0) g[static_cast<size_t>(r) * cols + c] = s[static_cast<size_t>(index[r]) * cols + c];
            if (perm[r] >= 0) sc[static_cast<size_t>(perm[r]) * cols + c] = s[static_cast<size_t>(r) * cols + c];
          }
      }
    });
    // argmax: ties, NaN in column 0 and elsewhere.
    std::vector<float> y = x;
    for (int r = 0; r < rows; ++r) {
      float* row = y.data() + static_cast<size_t>(r) * cols;
      if (r % 5 == 1) row[0] = NAN;
      if (r % 5 == 2 && cols > 3) row[2] = NAN;
      if (r % 5 == 3 && cols > 9) row[9] = row[3] = 10.0f;
    }
    check("argmax_rows " + sh + " (ties, NaN)", big, [&](Phase& p) {
      int32_t* out = p.in(std::vector<int32_t>(rows, -7));
      const float* s = p.in(y);
      if (p.gpu()) k::cuda::argmax_rows(s, rows, cols, out);
      else
        for (int r = 0; r < rows; ++r)
          out[r] = static_cast<int32_t>(std::max_element(s + static_cast<size_t>(r) * cols, s + static_cast<size_t>(r + 1) * cols) -
                                        (s + static_cast<size_t>(r) * cols));
      std::vector<int32_t> h(rows);
      if (p.gpu()) k::copy_bytes(h.data(), Device::cpu(), out, Device::cuda(0), rows * sizeof(int32_t));
      else std::copy(out, out + rows, h.begin());
      std::vector<float> as_float(h.begin(), h.end());
      float* record = p.inout("argmax", as_float, true);  // recorded as an output (exact)
      (void)record;
    });
    // Token ids as rows of a vocabulary slice [first, first + rows): outside it, or skip_id, -1.
    const auto ids = randint(rows, -3, 3 * rows);
    check("slice_ids " + sh, big, [&](Phase& p) {
      int32_t* out = p.in(std::vector<int32_t>(rows, -7));
      const int32_t* in = p.in(ids);
      const int first = rows / 3, count = rows / 3 + 1, skip = ids[0];
      if (p.gpu()) k::cuda::slice_ids(in, rows, first, count, skip, out);
      else
        for (int r = 0; r < rows; ++r) out[r] = in[r] != skip && in[r] >= first && in[r] < first + count ? in[r] - first : -1;
      std::vector<int32_t> h(rows);
      if (p.gpu()) k::copy_bytes(h.data(), Device::cpu(), out, Device::cuda(0), rows * sizeof(int32_t));
      else std::copy(out, out + rows, h.begin());
      p.inout("rows", std::vector<float>(h.begin(), h.end()), true);  // recorded as an output (exact)
    });
    check("cast float->double->float " + sh, big, [&](Phase& p) {
      std::vector<double> d0(n, 0.0);
      double* d = p.in(d0);
      float* back = p.out("back", n, true);
      const float* s = p.in(x);
      if (p.gpu()) {
        k::cuda::cast(s, d, n);
        k::cuda::cast(static_cast<const double*>(d), back, n);
      } else {
        for (size_t i = 0; i < n; ++i) d[i] = s[i], back[i] = static_cast<float>(d[i] * 1.0);
      }
    });
    // Half storage and back: the values a mixed-precision product reads (round_to_precision),
    // on values from below fp16's subnormals (2^-24) to 2^11 (the check takes an inf for an
    // unwritten value, so fp16's overflow is left to MixedPrecisionKernels.RoundsToNearestEven).
    std::vector<float> wide_range(x);
    for (size_t i = 0; i < n; ++i) wide_range[i] = x[i] * std::ldexp(1.0f, static_cast<int>(i % 40) - 30);
    for (const k::MatmulPrecision prec : {k::MatmulPrecision::Bf16, k::MatmulPrecision::Fp16}) {
      check(std::string("to_half+from_half ") + k::precision_name(prec) + " " + sh, big, [&](Phase& p) {
        uint16_t* h = p.in(std::vector<uint16_t>(n, 0));
        float* back = p.out("back", n, true);
        const float* s = p.in(wide_range);
        if (p.gpu()) {
          k::cuda::to_half(prec, s, h, n);
          k::cuda::from_half(prec, h, back, n);
        } else {
          k::round_to_precision(prec, s, back, n);
        }
      });
    }
  }
  const int N = 300;
  auto labels = randint(N, 0, 10);
  for (int i = 0; i < N; i += 4) labels[i] = -100;
  const auto mx = randn(N);
  std::vector<double> sumexp(N), target(N);
  for (int i = 0; i < N; ++i) sumexp[i] = 1.0 + i * 0.37, target[i] = std::sin(i * 1.0);
  check("ce_slice_loss N=300", false, [&](Phase& p) {
    if (p.gpu()) {
      p.scalar("loss", k::cuda::ce_slice_loss(p.in(labels), p.in(mx), p.in(sumexp), p.in(target), N, 7.0));
    } else {
      double total = 0;
      for (int n = 0; n < N; ++n)
        if (labels[n] != -100) total += std::log(sumexp[n]) + static_cast<double>(mx[n]) - target[n];
      p.scalar("loss", total / 7.0);
    }
  });
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--small") == 0) g_small = true;
    else if (std::strcmp(argv[i], "--self-test") == 0) g_self_test = true;
    else g_filter = argv[i];
  }
  if (k::cuda_device_count() == 0 && !g_self_test) {
    std::printf("strata_backend_ops: skipped: %s\n", k::cuda_unavailable_reason().c_str());
    return 77;
  }
  std::printf("strata_backend_ops: %s against the CPU (%s kernels), fp32, TF32 off%s\n",
              g_self_test ? "the CPU (--self-test)" : k::describe_device(Device::cuda(0)).c_str(), k::kernel_isa(),
              g_small ? ", small shapes" : "");
  k::set_tf32(false);
  gemm_cases();
  linear_cases();
  half_product_cases();
  layernorm_cases();
  activation_cases();
  dropout_cases();
  attention_cases();
  scores_softmax_cases();
  embedding_cases();
  loss_cases();
  optimizer_cases();
  helper_cases();
  data_cases();
  std::printf("strata_backend_ops: %d passed, %d failed\n", g_passed, g_failed);
  return g_failed ? 1 : 0;
}
