// Multi-head self-attention core (and its incremental-decoding form against a key/value
// cache). Work is split over (batch, head) pairs: each pair's
// products are small (T x HS x T), so one single-threaded GEMM per pair inside an OpenMP
// loop beats threading each GEMM (docs/gemm.md; OpenBLAS runs single-threaded inside a
// parallel region). Scale, mask and softmax are fused into one pass over each score row.
//
// Causal attention runs in blocks of kCausalBlock query rows: rows [i0, i1) attend to keys
// 0..i1-1 only, so the products skip the fully masked blocks above the diagonal (at T = 256,
// 3/8 of the attention flops). Keys use the same block edges as rows, so the transposed
// products of the backward (dV, dK: key block [j0, j1) against rows j0..T-1) read only
// scores inside computed blocks; the masked entries inside a diagonal block are exact zeros
// in P and dS. Without the causal mask there is one block of T rows.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/dropout_mask.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/ops.h"

namespace strata::kernels {

namespace {

// Rows i0..i1-1 of the scores S[T, T]: keys 0..end-1 of row i are candidates (end = i+1 when
// causal, T otherwise); of those, keys with key_mask == 0 get exactly 0 and the rest the
// softmax, and keys end..T-1 get 0 whether or not the product computed them. A row with no
// valid candidate is uniform over its candidates, which is what HF's additive finfo.min mask
// gives without causality (with it, HF's sum of two finfo.min masks is ill-defined; strata
// keeps the row causal).
template <typename T>
void masked_softmax_rows(T* S, const int32_t* key_mask, int T_, bool causal, int i0, int i1) {
  for (int i = i0; i < i1; ++i) {
    T* row = S + static_cast<size_t>(i) * T_;
    const int end = causal ? i + 1 : T_;
    std::fill(row + end, row + T_, T(0));
    int valid = 0;
    for (int j = 0; j < end; ++j) valid += key_mask[j] != 0;
    if (valid == 0) {
      std::fill(row, row + end, T(1) / T(end));
      continue;
    }
    T mx = -std::numeric_limits<T>::infinity();
    for (int j = 0; j < end; ++j)
      if (key_mask[j]) mx = std::max(mx, row[j]);
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < end; ++j) {
      const T e = key_mask[j] ? vec::exp(row[j] - mx) : T(0);
      row[j] = e;
      sum += e;
    }
    const T inv = T(1) / sum;
    for (int j = 0; j < end; ++j) row[j] *= inv;
  }
}

// Pd = dropout(P) on rows i0..i1-1, keys 0..keys-1; each element's mask is that of its index
// in probs (from `base`), so the forward and the backward drop the same elements.
template <typename T>
void drop_rows(const DropoutMask& drop, const T* P, T* Pd, int T_, int i0, int i1, int keys, size_t base) {
  for (int i = i0; i < i1; ++i) {
    const size_t r = static_cast<size_t>(i) * T_;
    drop.apply(P + r, Pd + r, keys, base + r);
  }
}

constexpr int kCausalBlock = 64;

struct Geometry {
  int B, T, C, NH, HS;
  bool causal;
  int mask_heads, mask_head0;  // the dropout mask's head numbering (AttentionShape::heads_total)
  size_t ld3() const { return static_cast<size_t>(3 * C); }
  size_t probs_offset(int b, int h) const { return (static_cast<size_t>(b) * NH + h) * T * T; }
  // Where head h's mask elements start: its index in the probabilities of all heads, so a
  // tensor-parallel rank with heads head0.. draws the masks one process draws for them.
  size_t mask_offset(int b, int h) const {
    return (static_cast<size_t>(b) * mask_heads + mask_head0 + h) * T * T;
  }
  size_t row0(int b) const { return static_cast<size_t>(b) * T; }
  int block() const { return causal ? kCausalBlock : T; }
  int block_end(int i0) const { return std::min(T, i0 + block()); }
  // Keys that rows of the block ending at i1 read; rows of key block j0 that read its keys.
  int keys(int i1) const { return causal ? i1 : T; }
  int first_row(int j0) const { return causal ? j0 : 0; }
};

}  // namespace

double AttentionShape::score_scale() const { return scale_scores ? 1.0 / std::sqrt(static_cast<double>(C / NH)) : 1.0; }

template <typename T>
void attention_forward(const AttentionShape& s, const T* qkv, const int32_t* mask, T* probs, T* ctx) {
  const Geometry g{s.B, s.T, s.C, s.NH, s.C / s.NH, s.causal, s.heads_total > 0 ? s.heads_total : s.NH, s.head0};
  const T scale = static_cast<T>(s.score_scale());
  const DropoutMask drop(s.dropout_p, s.seed, s.stream);
  const int ld3 = 3 * g.C;
#pragma omp parallel
  {
    std::vector<T> dropped(s.dropout_p > 0 ? static_cast<size_t>(g.T) * g.T : 0);
#pragma omp for collapse(2) schedule(static)
    for (int b = 0; b < g.B; ++b) {
      for (int h = 0; h < g.NH; ++h) {
        const T* q = qkv + g.row0(b) * g.ld3() + h * g.HS;
        const T* k = q + g.C;
        const T* v = q + 2 * g.C;
        T* P = probs + g.probs_offset(b, h);
        for (int i0 = 0; i0 < g.T; i0 += g.block()) {
          const int i1 = g.block_end(i0), keys = g.keys(i1);
          const size_t r0 = static_cast<size_t>(i0) * g.T;
          gemm<T>(false, true, i1 - i0, keys, g.HS, scale, q + i0 * g.ld3(), ld3, k, ld3, T(0), P + r0, g.T);
          masked_softmax_rows(P, mask + g.row0(b), g.T, s.causal, i0, i1);
          const T* Pd = P;
          if (drop.active()) {
            drop_rows(drop, P, dropped.data(), g.T, i0, i1, keys, g.mask_offset(b, h));
            Pd = dropped.data();
          }
          gemm<T>(false, false, i1 - i0, g.HS, keys, T(1), Pd + r0, g.T, v, ld3, T(0),
                  ctx + (g.row0(b) + i0) * g.C + h * g.HS, g.C);
        }
      }
    }
  }
}

template <typename T>
void attention_backward(const AttentionShape& s, const T* qkv, const T* probs, const T* dctx, T* dqkv) {
  const Geometry g{s.B, s.T, s.C, s.NH, s.C / s.NH, s.causal, s.heads_total > 0 ? s.heads_total : s.NH, s.head0};
  const T scale = static_cast<T>(s.score_scale());
  const DropoutMask drop(s.dropout_p, s.seed, s.stream);
  const int ld3 = 3 * g.C;
#pragma omp parallel
  {
    const size_t TT = static_cast<size_t>(g.T) * g.T;
    std::vector<T> dropped(s.dropout_p > 0 ? TT : 0), dS(TT);
#pragma omp for collapse(2) schedule(static)
    for (int b = 0; b < g.B; ++b) {
      for (int h = 0; h < g.NH; ++h) {
        const size_t off = g.row0(b) * g.ld3() + h * g.HS;
        const T* q = qkv + off;
        const T* k = q + g.C;
        const T* v = q + 2 * g.C;
        T* dq = dqkv + off;
        T* dk = dq + g.C;
        T* dv = dq + 2 * g.C;
        const T* P = probs + g.probs_offset(b, h);
        const T* dO = dctx + g.row0(b) * g.C + h * g.HS;
        const size_t base = g.mask_offset(b, h);
        const T* Pd = P;
        if (drop.active()) {
          for (int i0 = 0; i0 < g.T; i0 += g.block())
            drop_rows(drop, P, dropped.data(), g.T, i0, g.block_end(i0), g.keys(g.block_end(i0)), base);
          Pd = dropped.data();
        }
        // dV = Pd^T dO, by key block
        for (int j0 = 0; j0 < g.T; j0 += g.block()) {
          const int j1 = g.block_end(j0), r0 = g.first_row(j0);
          gemm<T>(true, false, j1 - j0, g.HS, g.T - r0, T(1), Pd + static_cast<size_t>(r0) * g.T + j0, g.T,
                  dO + static_cast<size_t>(r0) * g.C, g.C, T(0), dv + j0 * g.ld3(), ld3);
        }
        for (int i0 = 0; i0 < g.T; i0 += g.block()) {
          const int i1 = g.block_end(i0), keys = g.keys(i1);
          T* dSb = dS.data() + static_cast<size_t>(i0) * g.T;
          // dPd = dO V^T; dS = P * (dP - rowsum(dP * P)), dP = dropout_backward(dPd)
          gemm<T>(false, true, i1 - i0, keys, g.HS, T(1), dO + static_cast<size_t>(i0) * g.C, g.C, v, ld3, T(0),
                  dSb, g.T);
          for (int i = i0; i < i1; ++i) {
            T* row = dS.data() + static_cast<size_t>(i) * g.T;
            const T* prow = P + static_cast<size_t>(i) * g.T;
            if (drop.active()) drop.apply(row, row, keys, base + static_cast<size_t>(i) * g.T);
            T dot = 0;
#pragma omp simd reduction(+ : dot)
            for (int j = 0; j < keys; ++j) dot += row[j] * prow[j];
#pragma omp simd
            for (int j = 0; j < keys; ++j) row[j] = prow[j] * (row[j] - dot);
          }
          // dQ = scale dS K
          gemm<T>(false, false, i1 - i0, g.HS, keys, scale, dSb, g.T, k, ld3, T(0), dq + i0 * g.ld3(), ld3);
        }
        // dK = scale dS^T Q, by key block
        for (int j0 = 0; j0 < g.T; j0 += g.block()) {
          const int j1 = g.block_end(j0), r0 = g.first_row(j0);
          gemm<T>(true, false, j1 - j0, g.HS, g.T - r0, scale, dS.data() + static_cast<size_t>(r0) * g.T + j0, g.T,
                  q + r0 * g.ld3(), ld3, T(0), dk + j0 * g.ld3(), ld3);
        }
      }
    }
  }
}

template <typename T>
void attention_cached_forward(const CachedAttentionShape& s, const T* q, int ldq, const T* k, const T* v, T* scores,
                              T* ctx) {
  const int HS = s.C / s.NH, past = s.Tk - s.Tq;
  const AttentionShape full{s.B, s.Tk, s.C, s.NH, 0.0f, 0, 0, true, s.scale_scores};
  const T scale = static_cast<T>(full.score_scale());
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < s.B; ++b) {
    for (int h = 0; h < s.NH; ++h) {
      const T* qb = q + static_cast<size_t>(b) * s.Tq * ldq + h * HS;
      const size_t kv = static_cast<size_t>(b) * s.ldt * s.C + h * HS;
      T* S = scores + (static_cast<size_t>(b) * s.NH + h) * s.Tq * s.Tk;
      gemm<T>(false, true, s.Tq, s.Tk, HS, scale, qb, ldq, k + kv, s.C, T(0), S, s.Tk);
      // The causal softmax of attention_forward's row past+i: keys past the query get 0.
      for (int i = 0; i < s.Tq; ++i) {
        T* row = S + static_cast<size_t>(i) * s.Tk;
        const int end = past + i + 1;
        std::fill(row + end, row + s.Tk, T(0));
        T mx = -std::numeric_limits<T>::infinity();
        for (int j = 0; j < end; ++j) mx = std::max(mx, row[j]);
        T sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j < end; ++j) {
          const T e = vec::exp(row[j] - mx);
          row[j] = e;
          sum += e;
        }
        const T inv = T(1) / sum;
        for (int j = 0; j < end; ++j) row[j] *= inv;
      }
      gemm<T>(false, false, s.Tq, HS, s.Tk, T(1), S, s.Tk, v + kv, s.C, T(0),
              ctx + static_cast<size_t>(b) * s.Tq * s.C + h * HS, s.C);
    }
  }
}

template void attention_forward<float>(const AttentionShape&, const float*, const int32_t*, float*, float*);
template void attention_forward<double>(const AttentionShape&, const double*, const int32_t*, double*, double*);
template void attention_backward<float>(const AttentionShape&, const float*, const float*, const float*, float*);
template void attention_backward<double>(const AttentionShape&, const double*, const double*, const double*,
                                         double*);
template void attention_cached_forward<float>(const CachedAttentionShape&, const float*, int, const float*,
                                              const float*, float*, float*);
template void attention_cached_forward<double>(const CachedAttentionShape&, const double*, int, const double*,
                                               const double*, double*, double*);

}  // namespace strata::kernels
