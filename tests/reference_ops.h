// Slow, obviously-correct reference implementations of the ops in kernels/ops.h, in double,
// written as plain loops straight from the formulas (as llm.c keeps train_gpt2.c beside its
// fast path). The kernel tests compare the fast CPU kernels against these; keep them simple
// rather than fast, so that a disagreement points at the kernel.
//
// Each function follows the same contract as its counterpart in ops.h (what is written, what
// is added into). Dropout has no reference: its random stream uniform(seed, stream, i) is not
// part of the interface, so the tests check its statistical and consistency properties
// instead, and the reference attention requires dropout_p == 0.
#pragma once
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/ops.h"

namespace strata::ref {

using kernels::Activation;
using kernels::AttentionShape;

// ---- matrix products -----------------------------------------------------------------
// C[M,N] = alpha * op(A) op(B) + beta * C, row-major with leading dimensions.
inline void gemm(bool trans_a, bool trans_b, int M, int N, int K, double alpha, const double* A,
                 int lda, const double* B, int ldb, double beta, double* C, int ldc) {
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double acc = 0;
      for (int k = 0; k < K; ++k) {
        const double a = trans_a ? A[k * lda + i] : A[i * lda + k];
        const double b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
        acc += a * b;
      }
      C[i * ldc + j] = alpha * acc + beta * C[i * ldc + j];
    }
  }
}

// y[n,o] = sum_i x[n,i] W[o,i] + b[o].
inline void linear_forward(const double* x, const double* W, const double* b, double* y, int N,
                           int in, int out) {
  for (int n = 0; n < N; ++n) {
    for (int o = 0; o < out; ++o) {
      double acc = b ? b[o] : 0.0;
      for (int i = 0; i < in; ++i) acc += x[n * in + i] * W[o * in + i];
      y[n * out + o] = acc;
    }
  }
}

// dx = dy W (if dx); dW += dy^T x; db += column sums of dy (if db).
inline void linear_backward(const double* x, const double* W, const double* dy, double* dx,
                            double* dW, double* db, int N, int in, int out) {
  if (dx) {
    for (int n = 0; n < N; ++n) {
      for (int i = 0; i < in; ++i) {
        double acc = 0;
        for (int o = 0; o < out; ++o) acc += dy[n * out + o] * W[o * in + i];
        dx[n * in + i] = acc;
      }
    }
  }
  for (int o = 0; o < out; ++o) {
    for (int i = 0; i < in; ++i) {
      double acc = 0;
      for (int n = 0; n < N; ++n) acc += dy[n * out + o] * x[n * in + i];
      dW[o * in + i] += acc;
    }
  }
  if (db) {
    for (int o = 0; o < out; ++o) {
      double acc = 0;
      for (int n = 0; n < N; ++n) acc += dy[n * out + o];
      db[o] += acc;
    }
  }
}

// ---- normalisation -------------------------------------------------------------------
// Biased variance, rstd = 1/sqrt(var + eps), as torch.nn.LayerNorm.
inline void layernorm_forward(const double* x, const double* gamma, const double* beta, double* y,
                              double* mean, double* rstd, int N, int C, double eps) {
  for (int n = 0; n < N; ++n) {
    const double* xr = x + n * C;
    double m = 0;
    for (int c = 0; c < C; ++c) m += xr[c];
    m /= C;
    double var = 0;
    for (int c = 0; c < C; ++c) var += (xr[c] - m) * (xr[c] - m);
    var /= C;
    const double r = 1.0 / std::sqrt(var + eps);
    for (int c = 0; c < C; ++c) y[n * C + c] = (xr[c] - m) * r * gamma[c] + beta[c];
    mean[n] = m;
    rstd[n] = r;
  }
}

// With xhat = (x - mean) rstd and g = dy * gamma:
// dx = rstd (g - mean(g) - xhat mean(g xhat)); dgamma += sum_n dy xhat; dbeta += sum_n dy.
inline void layernorm_backward(const double* x, const double* gamma, const double* mean,
                               const double* rstd, const double* dy, double* dx, double* dgamma,
                               double* dbeta, int N, int C) {
  for (int n = 0; n < N; ++n) {
    double mean_g = 0, mean_g_xhat = 0;
    for (int c = 0; c < C; ++c) {
      const double xhat = (x[n * C + c] - mean[n]) * rstd[n];
      const double g = dy[n * C + c] * gamma[c];
      mean_g += g;
      mean_g_xhat += g * xhat;
    }
    mean_g /= C;
    mean_g_xhat /= C;
    for (int c = 0; c < C; ++c) {
      const double xhat = (x[n * C + c] - mean[n]) * rstd[n];
      const double g = dy[n * C + c] * gamma[c];
      dx[n * C + c] = rstd[n] * (g - mean_g - xhat * mean_g_xhat);
      dgamma[c] += dy[n * C + c] * xhat;
      dbeta[c] += dy[n * C + c];
    }
  }
}

// RMS norm (T5LayerNorm): rstd = 1/sqrt(mean(x^2) + eps), y = gamma x rstd; no mean, no beta.
inline void rmsnorm_forward(const double* x, const double* gamma, double* y, double* rstd, int N, int C, double eps) {
  for (int n = 0; n < N; ++n) {
    double ms = 0;
    for (int c = 0; c < C; ++c) ms += x[n * C + c] * x[n * C + c];
    rstd[n] = 1.0 / std::sqrt(ms / C + eps);
    for (int c = 0; c < C; ++c) y[n * C + c] = gamma[c] * x[n * C + c] * rstd[n];
  }
}

// With xhat = x rstd and g = dy * gamma: dx = rstd (g - xhat mean(g xhat)); dgamma += sum_n dy xhat.
inline void rmsnorm_backward(const double* x, const double* gamma, const double* rstd, const double* dy, double* dx,
                             double* dgamma, int N, int C) {
  for (int n = 0; n < N; ++n) {
    double mean_g_xhat = 0;
    for (int c = 0; c < C; ++c) mean_g_xhat += dy[n * C + c] * gamma[c] * x[n * C + c] * rstd[n];
    mean_g_xhat /= C;
    for (int c = 0; c < C; ++c) {
      const double xhat = x[n * C + c] * rstd[n];
      dx[n * C + c] = rstd[n] * (dy[n * C + c] * gamma[c] - xhat * mean_g_xhat);
      dgamma[c] += dy[n * C + c] * xhat;
    }
  }
}

// ---- activations ---------------------------------------------------------------------
inline constexpr double kPi = 3.14159265358979323846;

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

inline double activation(Activation a, double x) {
  switch (a) {
    case Activation::GeluErf:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Activation::GeluTanh:
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / kPi) * (x + 0.044715 * x * x * x)));
    case Activation::Relu:
      return x > 0 ? x : 0.0;
    case Activation::Silu:
      return x * sigmoid(x);
    case Activation::Tanh:
      return std::tanh(x);
  }
  assert(false);
  return 0;
}

// d activation(x) / dx, differentiated by hand from the formulas above.
inline double activation_grad(Activation a, double x) {
  switch (a) {
    case Activation::GeluErf:
      return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) +
             x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * kPi);
    case Activation::GeluTanh: {
      const double k = std::sqrt(2.0 / kPi);
      const double t = std::tanh(k * (x + 0.044715 * x * x * x));
      return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
    }
    case Activation::Relu:
      return x > 0 ? 1.0 : 0.0;
    case Activation::Silu: {
      const double s = sigmoid(x);
      return s * (1.0 + x * (1.0 - s));
    }
    case Activation::Tanh: {
      const double t = std::tanh(x);
      return 1.0 - t * t;
    }
  }
  assert(false);
  return 0;
}

inline void activation_forward(Activation a, const double* x, double* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = activation(a, x[i]);
}

inline void activation_backward(Activation a, const double* x, const double* dy, double* dx,
                                size_t n) {
  for (size_t i = 0; i < n; ++i) dx[i] = dy[i] * activation_grad(a, x[i]);
}

inline void linear_act_forward(Activation a, const double* x, const double* W, const double* b,
                               double* pre, double* y, int N, int in, int out) {
  linear_forward(x, W, b, pre, N, in, out);
  activation_forward(a, pre, y, size_t(N) * out);
}

// ---- attention -----------------------------------------------------------------------
// Element pointers into the fused qkv[B*T, 3C] layout: q | k | v, head h at column h*HS.
struct QkvIndex {
  const AttentionShape& s;
  int HS() const { return s.C / s.NH; }
  size_t row(int b, int t) const { return (size_t(b) * s.T + t) * 3 * s.C; }
  size_t q(int b, int t, int h) const { return row(b, t) + size_t(h) * HS(); }
  size_t k(int b, int t, int h) const { return q(b, t, h) + s.C; }
  size_t v(int b, int t, int h) const { return q(b, t, h) + 2 * s.C; }
  size_t probs_row(int b, int h, int t) const { return ((size_t(b) * s.NH + h) * s.T + t) * s.T; }
  size_t ctx(int b, int t, int h) const { return (size_t(b) * s.T + t) * s.C + size_t(h) * HS(); }
};

// probs[b,h,t,:] = softmax over valid keys of q.k * scale (masked keys exactly 0; uniform when
// no key is valid); ctx = probs v. No dropout. Causal: keys u > t are never valid, and a row
// with no valid key is uniform over keys 0..t. scale = 1/sqrt(HS), or 1 without scale_scores.
inline void attention_forward(const AttentionShape& s, const double* qkv, const int32_t* mask,
                              double* probs, double* ctx) {
  assert(s.dropout_p == 0);
  const QkvIndex ix{s};
  const int HS = ix.HS();
  const double scale = s.scale_scores ? 1.0 / std::sqrt(double(HS)) : 1.0;
  for (int b = 0; b < s.B; ++b) {
    for (int h = 0; h < s.NH; ++h) {
      for (int t = 0; t < s.T; ++t) {
        double* p = probs + ix.probs_row(b, h, t);
        const int keys = s.causal ? t + 1 : s.T;  // candidate keys 0..keys-1
        bool any_valid = false;
        for (int u = 0; u < keys; ++u) any_valid = any_valid || mask[b * s.T + u] != 0;
        if (!any_valid) {
          for (int u = 0; u < s.T; ++u) p[u] = u < keys ? 1.0 / keys : 0.0;
        } else {
          std::vector<double> score(s.T);
          double max_score = -INFINITY;
          for (int u = 0; u < keys; ++u) {
            if (mask[b * s.T + u] == 0) continue;
            double dot = 0;
            for (int i = 0; i < HS; ++i) dot += qkv[ix.q(b, t, h) + i] * qkv[ix.k(b, u, h) + i];
            score[u] = dot * scale;
            max_score = std::max(max_score, score[u]);
          }
          double sum = 0;
          for (int u = 0; u < s.T; ++u) {
            p[u] = u < keys && mask[b * s.T + u] != 0 ? std::exp(score[u] - max_score) : 0.0;
            sum += p[u];
          }
          for (int u = 0; u < s.T; ++u) p[u] /= sum;
        }
        for (int i = 0; i < HS; ++i) {
          double acc = 0;
          for (int u = 0; u < s.T; ++u) acc += p[u] * qkv[ix.v(b, u, h) + i];
          ctx[ix.ctx(b, t, h) + i] = acc;
        }
      }
    }
  }
}

// dqkv (written) for ctx = softmax(S) v with S = q k^T scale. The softmax backward is the
// usual dS = P (dP - sum(P dP)) on every row, which is what PyTorch autograd gives behind
// HF's additive mask; for a fully masked (uniform) row this differs from the derivative of
// the constant forward, so gradient checks leave such rows' q and k out.
inline void attention_backward(const AttentionShape& s, const double* qkv, const double* probs,
                               const double* dctx, double* dqkv) {
  assert(s.dropout_p == 0);
  const QkvIndex ix{s};
  const int HS = ix.HS();
  const double scale = s.scale_scores ? 1.0 / std::sqrt(double(HS)) : 1.0;
  for (size_t i = 0; i < size_t(s.B) * s.T * 3 * s.C; ++i) dqkv[i] = 0;
  for (int b = 0; b < s.B; ++b) {
    for (int h = 0; h < s.NH; ++h) {
      for (int t = 0; t < s.T; ++t) {
        const double* p = probs + ix.probs_row(b, h, t);
        const double* dc = dctx + ix.ctx(b, t, h);
        std::vector<double> dp(s.T);
        double p_dot_dp = 0;
        for (int u = 0; u < s.T; ++u) {
          for (int i = 0; i < HS; ++i) {
            dp[u] += dc[i] * qkv[ix.v(b, u, h) + i];
            dqkv[ix.v(b, u, h) + i] += p[u] * dc[i];
          }
          p_dot_dp += p[u] * dp[u];
        }
        for (int u = 0; u < s.T; ++u) {
          const double ds = p[u] * (dp[u] - p_dot_dp) * scale;
          for (int i = 0; i < HS; ++i) {
            dqkv[ix.q(b, t, h) + i] += ds * qkv[ix.k(b, u, h) + i];
            dqkv[ix.k(b, u, h) + i] += ds * qkv[ix.q(b, t, h) + i];
          }
        }
      }
    }
  }
}

// ---- embeddings ----------------------------------------------------------------------
inline void embedding_forward(const int32_t* ids, const double* table, double* out, int N, int C) {
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) out[n * C + c] += table[size_t(ids[n]) * C + c];
}

inline void embedding_backward(const int32_t* ids, const double* dout, double* dtable, int N,
                               int C, int skip_id) {
  for (int n = 0; n < N; ++n) {
    if (ids[n] == skip_id) continue;
    for (int c = 0; c < C; ++c) dtable[size_t(ids[n]) * C + c] += dout[n * C + c];
  }
}

// ---- losses --------------------------------------------------------------------------
inline constexpr int32_t kIgnoreIndex = -100;

// sum over non-ignored rows of logsumexp(z) - z[label], / norm; dlogits = (softmax - onehot)
// / norm on those rows and 0 on ignored rows.
inline double cross_entropy(const double* logits, const int32_t* labels, double* dlogits, int N,
                            int V, double norm) {
  double total = 0;
  for (int n = 0; n < N; ++n) {
    const double* z = logits + size_t(n) * V;
    if (labels[n] == kIgnoreIndex) {
      if (dlogits)
        for (int v = 0; v < V; ++v) dlogits[size_t(n) * V + v] = 0;
      continue;
    }
    double max_z = z[0];
    for (int v = 1; v < V; ++v) max_z = std::max(max_z, z[v]);
    double sum = 0;
    for (int v = 0; v < V; ++v) sum += std::exp(z[v] - max_z);
    total += max_z + std::log(sum) - z[labels[n]];
    if (dlogits) {
      for (int v = 0; v < V; ++v) {
        const double softmax = std::exp(z[v] - max_z) / sum;
        dlogits[size_t(n) * V + v] = (softmax - (v == labels[n] ? 1.0 : 0.0)) / norm;
      }
    }
  }
  return total / norm;
}

// sum (x - target)^2 / norm; dx = 2 (x - target) / norm.
inline double mse(const double* x, const double* target, double* dx, size_t n, double norm) {
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = x[i] - target[i];
    total += d * d;
    if (dx) dx[i] = 2.0 * d / norm;
  }
  return total / norm;
}

// -[t log sigmoid(x) + (1-t) log(1 - sigmoid(x))] in the stable form
// max(x,0) - x t + log(1 + exp(-|x|)); dx = (sigmoid(x) - t) / norm.
inline double bce_with_logits(const double* x, const double* target, double* dx, size_t n,
                              double norm) {
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    total += std::max(x[i], 0.0) - x[i] * target[i] + std::log1p(std::exp(-std::abs(x[i])));
    if (dx) dx[i] = (sigmoid(x[i]) - target[i]) / norm;
  }
  return total / norm;
}

// ---- optimizers ----------------------------------------------------------------------
// torch.optim.AdamW, one step, element by element.
inline void adamw_update(double* p, const double* g, double* m, double* v, size_t n,
                         const kernels::AdamWParams& a) {
  const double bias1 = 1.0 - std::pow(a.beta1, double(a.step));
  const double bias2 = 1.0 - std::pow(a.beta2, double(a.step));
  for (size_t i = 0; i < n; ++i) {
    p[i] *= 1.0 - a.lr * a.weight_decay;
    m[i] = a.beta1 * m[i] + (1.0 - a.beta1) * g[i];
    v[i] = a.beta2 * v[i] + (1.0 - a.beta2) * g[i] * g[i];
    p[i] -= a.lr / bias1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bias2) + a.eps);
  }
}

// torch.optim.SGD, one step: on the first step the momentum buffer is the gradient itself.
inline void sgd_update(double* p, const double* g, double* buf, size_t n,
                       const kernels::SGDParams& a) {
  for (size_t i = 0; i < n; ++i) {
    double d = g[i] + a.weight_decay * p[i];
    if (a.momentum != 0) {
      buf[i] = a.first_step ? d : a.momentum * buf[i] + (1.0 - a.dampening) * d;
      d = a.nesterov ? d + a.momentum * buf[i] : buf[i];
    }
    p[i] -= a.lr * d;
  }
}

// ---- small helpers -------------------------------------------------------------------
inline double sum_squares(const double* x, size_t n) {
  double total = 0;
  for (size_t i = 0; i < n; ++i) total += x[i] * x[i];
  return total;
}

inline void scale(double* x, size_t n, double s) {
  for (size_t i = 0; i < n; ++i) x[i] *= s;
}

inline void add(const double* a, const double* b, double* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

}  // namespace strata::ref
