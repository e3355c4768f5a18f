// Multi-head self-attention (kernels/ops.h) on the GPU, fused in the manner of FlashAttention:
// the [T, T] probabilities never reach memory. The saved state (attention_saved_size) is the
// log-sum-exp of each score row, [B, NH, T], followed by the key mask as floats, [B, T]: the
// backward recomputes the probabilities from q, k and the log-sum-exp, and the backward's
// signature has no mask (the CPU's saved probabilities carry it), so the forward keeps a copy.
//
// Layout: warp w of a block owns one query row (forward, dQ) or one key (dK, dV); its lanes
// take 32 keys (queries) of a tile at a time, staged in shared memory with an odd row stride
// so that lane j reading row j is free of bank conflicts, and the head dimension HS is spread
// over the lanes (lane l holds dims l, l+32, ..., DPL per lane) for the products with V (dO,
// K, Q). fp32 on CUDA cores throughout: TF32 or tensor cores would not give fp32 results.
// Under bf16 / fp16 products (kernels/matmul_precision.h) q, k and v are read rounded to that
// type, as the CPU's products read them (and as the blocks keep them for backward:
// nn/block_activations.h); the probabilities and the gradients stay fp32 here, where the
// CPU's products round them too: the GPU's attention is the more exact of the two there.
//
// Masks, as on the CPU (kernels/cpu/simd/attention.inc): key j of row i is a candidate if
// j < T (and j <= i when causal); candidates with mask[b, j] == 0 get probability 0; a row
// with no valid candidate is uniform over its candidates (its scores taken as 0). Dropout on
// the probabilities draws element (b, h, i, j) at index ((b*heads + head0 + h)*T + i)*T + j of
// the layer's stream, the CPU's index in probs of all heads, so the masks are the CPU's.
//
// Backward: D_i = sum_j P_ij dP_ij first (with dP the gradient through dropout), which needs
// a pass over the keys before any dS is known; then dQ by query rows (one kernel, after D in
// the same kernel), dK and dV by keys (a second kernel): every output written by one warp,
// summed in a fixed order, no atomics.
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/dropout_mask.cuh"

namespace strata::kernels::cuda {

namespace {

constexpr int kWarps = 8;   // query rows (keys) per block
constexpr int kTile = 32;   // keys (queries) per shared-memory tile
constexpr int kMaxHS = 256;

struct Geo {
  int B, T, C, NH, HS, stride;  // stride: the shared row stride, odd
  bool causal;
  float scale;
  int mask_heads, head0;
  GpuDropout drop;
  MatmulPrecision products;  // q, k, v are read rounded to bf16 / fp16 under those

  // Element idx of q|k|v as the products read it.
  __device__ float in(const float* qkv, size_t idx) const {
    if (products == MatmulPrecision::Fp32) return qkv[idx];
    const bool bf16 = products == MatmulPrecision::Bf16;
    return from_half_bits(bf16, to_half_bits(bf16, qkv[idx]));
  }

  __device__ size_t qrow(int b, int t) const { return (static_cast<size_t>(b) * T + t) * 3 * C; }
  __device__ uint64_t drop_index(int b, int h, int i, int j) const {
    return ((static_cast<uint64_t>(b) * mask_heads + head0 + h) * T + i) * T + j;
  }
  __device__ int end(int i) const { return causal ? i + 1 : T; }  // candidates of row i: keys < end
};

Geo make_geo(const AttentionShape& s) {
  Geo g;
  g.B = s.B;
  g.T = s.T;
  g.C = s.C;
  g.NH = s.NH;
  g.HS = s.C / s.NH;
  g.stride = g.HS % 2 ? g.HS : g.HS + 1;
  g.causal = s.causal;
  g.scale = static_cast<float>(s.score_scale());
  g.mask_heads = s.heads_total > 0 ? s.heads_total : s.NH;
  g.head0 = s.head0;
  g.drop = GpuDropout::make(s.dropout_p, s.seed, s.stream);
  g.products = matmul_precision();
  if (g.HS > kMaxHS)
    throw std::runtime_error("kernels::attention on the GPU: head size " + std::to_string(g.HS) + " > " +
                             std::to_string(kMaxHS) + " is not supported");
  return g;
}

// The first key with mask != 0 in row b (T if none): row i has a valid candidate iff it is
// below end(i). Every thread of the block gets it.
template <typename M>
__device__ int first_valid_key(const M* mask, int b, int T) {
  __shared__ int s_first;
  if (threadIdx.x == 0) s_first = T;
  __syncthreads();
  if (mask) {
    int mine = T;
    for (int j = threadIdx.x; j < T; j += blockDim.x)
      if (mask[static_cast<size_t>(b) * T + j] != M(0)) {
        mine = j;
        break;
      }
    if (mine < T) atomicMin(&s_first, mine);  // a min: the same result in any order
  } else if (threadIdx.x == 0) {
    s_first = 0;
  }
  __syncthreads();
  return s_first;
}

// Whether key j is a valid candidate of row i (uniform rows: every candidate is).
__device__ __forceinline__ bool key_valid(const Geo& g, const float* mask, int b, int i, int j, bool uniform) {
  if (j >= g.T || j >= g.end(i)) return false;
  return uniform || mask[static_cast<size_t>(b) * g.T + j] != 0.f;
}

// dot(x[0..HS), row[0..HS)), x broadcast from shared memory.
__device__ __forceinline__ float dot(const float* x, const float* row, int HS) {
  float acc = 0.f;
  for (int d = 0; d < HS; ++d) acc += x[d] * row[d];
  return acc;
}

// Rows r0.. r0+kTile-1 of the q, k or v part (offset `part` * C) of head h into tile[kTile][stride]
// (zeros past T).
__device__ void load_tile(const Geo& g, const float* qkv, int b, int h, int part, int r0, float* tile) {
  for (int e = threadIdx.x; e < kTile * g.HS; e += blockDim.x) {
    const int r = e / g.HS, d = e % g.HS, t = r0 + r;
    tile[r * g.stride + d] = t < g.T ? g.in(qkv, g.qrow(b, t) + part * g.C + h * g.HS + d) : 0.f;
  }
}

// ---- forward --------------------------------------------------------------------------------
template <int DPL>
__global__ void __launch_bounds__(kWarps * 32) attention_forward_kernel(Geo g, const float* __restrict__ qkv,
                                                                        const float* __restrict__ mask,
                                                                        float* __restrict__ lse, float* __restrict__ ctx) {
  extern __shared__ float smem[];
  float* Ks = smem;
  float* Vs = Ks + kTile * g.stride;
  float* Qs = Vs + kTile * g.stride;  // [kWarps][HS]
  const int b = blockIdx.z, h = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int i = blockIdx.x * kWarps + warp;
  const bool active = i < g.T;
  const int first = first_valid_key(mask, b, g.T);
  const bool uniform = active && first >= g.end(i);
  float* q = Qs + warp * g.HS;
  if (active)
    for (int d = lane; d < g.HS; d += 32) q[d] = g.in(qkv, g.qrow(b, i) + h * g.HS + d);
  float o[DPL];
#pragma unroll
  for (int t = 0; t < DPL; ++t) o[t] = 0.f;
  float m = -INFINITY, l = 0.f;
  const int last_row = min(g.T, (blockIdx.x + 1) * kWarps) - 1;
  const int keys = g.causal ? last_row + 1 : g.T;
  for (int j0 = 0; j0 < keys; j0 += kTile) {
    __syncthreads();  // the previous tile is consumed
    load_tile(g, qkv, b, h, 1, j0, Ks);
    load_tile(g, qkv, b, h, 2, j0, Vs);
    __syncthreads();
    if (!active) continue;
    const int j = j0 + lane;
    const bool valid = key_valid(g, mask, b, i, j, uniform);
    const float s = valid ? (uniform ? 0.f : dot(q, Ks + lane * g.stride, g.HS) * g.scale) : -INFINITY;
    const float tile_max = warp_max(s);
    if (tile_max == -INFINITY) continue;  // no valid key in this tile (warp-uniform)
    const float m_new = fmaxf(m, tile_max);
    const float corr = expf(m - m_new);  // 0 on the first tile with a valid key
    float p = valid ? expf(s - m_new) : 0.f;
    l = l * corr + warp_sum(p);
    m = m_new;
    if (g.drop.active) p = g.drop.kept(g.drop_index(b, h, i, j)) ? p * g.drop.scale : 0.f;
#pragma unroll
    for (int t = 0; t < DPL; ++t) o[t] *= corr;
    const int n = min(kTile, keys - j0);
    for (int jj = 0; jj < n; ++jj) {
      const float pj = __shfl_sync(0xffffffffu, p, jj);
      if (pj == 0.f) continue;  // warp-uniform
      const float* vrow = Vs + jj * g.stride;
#pragma unroll
      for (int t = 0; t < DPL; ++t) {
        const int d = lane + 32 * t;
        if (d < g.HS) o[t] += pj * vrow[d];
      }
    }
  }
  if (!active) return;
  const float inv = 1.f / l;
  float* out = ctx + (static_cast<size_t>(b) * g.T + i) * g.C + h * g.HS;
#pragma unroll
  for (int t = 0; t < DPL; ++t) {
    const int d = lane + 32 * t;
    if (d < g.HS) out[d] = o[t] * inv;
  }
  if (lane == 0) lse[(static_cast<size_t>(b) * g.NH + h) * g.T + i] = m + logf(l);
}

// ---- backward: D and dQ, by query rows -------------------------------------------------------
// P_ij and dP_ij (the gradient of the probability, through dropout) for lane's key j.
struct PdP {
  float p, dp;
};

template <int DPL>
__global__ void __launch_bounds__(kWarps * 32) attention_dq_kernel(Geo g, const float* __restrict__ qkv,
                                                                   const float* __restrict__ mask,
                                                                   const float* __restrict__ lse,
                                                                   const float* __restrict__ dctx,
                                                                   float* __restrict__ Dout, float* __restrict__ dqkv) {
  extern __shared__ float smem[];
  float* Ks = smem;
  float* Vs = Ks + kTile * g.stride;
  float* Qs = Vs + kTile * g.stride;   // [kWarps][HS]
  float* dOs = Qs + kWarps * g.HS;     // [kWarps][HS]
  const int b = blockIdx.z, h = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int i = blockIdx.x * kWarps + warp;
  const bool active = i < g.T;
  const int first = first_valid_key(mask, b, g.T);
  const bool uniform = active && first >= g.end(i);
  float* q = Qs + warp * g.HS;
  float* dO = dOs + warp * g.HS;
  if (active)
    for (int d = lane; d < g.HS; d += 32) {
      q[d] = g.in(qkv, g.qrow(b, i) + h * g.HS + d);
      dO[d] = dctx[(static_cast<size_t>(b) * g.T + i) * g.C + h * g.HS + d];
    }
  const float L = active ? lse[(static_cast<size_t>(b) * g.NH + h) * g.T + i] : 0.f;
  const int last_row = min(g.T, (blockIdx.x + 1) * kWarps) - 1;
  const int keys = g.causal ? last_row + 1 : g.T;

  auto p_dp = [&](int j0) -> PdP {
    const int j = j0 + lane;
    if (!key_valid(g, mask, b, i, j, uniform)) return {0.f, 0.f};
    const float s = uniform ? 0.f : dot(q, Ks + lane * g.stride, g.HS) * g.scale;
    float dp = dot(dO, Vs + lane * g.stride, g.HS);
    if (g.drop.active) dp = g.drop.kept(g.drop_index(b, h, i, j)) ? dp * g.drop.scale : 0.f;
    return {expf(s - L), dp};
  };

  // Pass 1: D = sum_j P dP.
  float Dsum = 0.f;
  for (int j0 = 0; j0 < keys; j0 += kTile) {
    __syncthreads();
    load_tile(g, qkv, b, h, 1, j0, Ks);
    load_tile(g, qkv, b, h, 2, j0, Vs);
    __syncthreads();
    if (!active) continue;
    const PdP r = p_dp(j0);
    Dsum += r.p * r.dp;
  }
  const float D = warp_sum(Dsum);
  if (active && lane == 0) Dout[(static_cast<size_t>(b) * g.NH + h) * g.T + i] = D;
  // Pass 2: dQ = scale * sum_j P (dP - D) k_j.
  float acc[DPL];
#pragma unroll
  for (int t = 0; t < DPL; ++t) acc[t] = 0.f;
  for (int j0 = 0; j0 < keys; j0 += kTile) {
    __syncthreads();
    load_tile(g, qkv, b, h, 1, j0, Ks);
    load_tile(g, qkv, b, h, 2, j0, Vs);
    __syncthreads();
    if (!active) continue;
    const PdP r = p_dp(j0);
    const float ds = r.p * (r.dp - D);
    const int n = min(kTile, keys - j0);
    for (int jj = 0; jj < n; ++jj) {
      const float dsj = __shfl_sync(0xffffffffu, ds, jj);
      if (dsj == 0.f) continue;
      const float* krow = Ks + jj * g.stride;
#pragma unroll
      for (int t = 0; t < DPL; ++t) {
        const int d = lane + 32 * t;
        if (d < g.HS) acc[t] += dsj * krow[d];
      }
    }
  }
  if (!active) return;
  float* dq = dqkv + g.qrow(b, i) + h * g.HS;
#pragma unroll
  for (int t = 0; t < DPL; ++t) {
    const int d = lane + 32 * t;
    if (d < g.HS) dq[d] = acc[t] * g.scale;
  }
}

// ---- backward: dK and dV, by keys -------------------------------------------------------------
template <int DPL>
__global__ void __launch_bounds__(kWarps * 32) attention_dkv_kernel(Geo g, const float* __restrict__ qkv,
                                                                    const float* __restrict__ mask,
                                                                    const float* __restrict__ lse,
                                                                    const float* __restrict__ Dg,
                                                                    const float* __restrict__ dctx,
                                                                    float* __restrict__ dqkv) {
  extern __shared__ float smem[];
  float* Qs = smem;                      // [kTile][stride]
  float* dOs = Qs + kTile * g.stride;    // [kTile][stride]
  float* Kw = dOs + kTile * g.stride;    // [kWarps][HS]
  float* Vw = Kw + kWarps * g.HS;        // [kWarps][HS]
  float* Ls = Vw + kWarps * g.HS;        // [kTile]
  float* Ds = Ls + kTile;                // [kTile]
  const int b = blockIdx.z, h = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int j = blockIdx.x * kWarps + warp;
  const bool active = j < g.T;
  const int first = first_valid_key(mask, b, g.T);
  const bool key_unmasked = active && mask[static_cast<size_t>(b) * g.T + j] != 0.f;
  float* k = Kw + warp * g.HS;
  float* v = Vw + warp * g.HS;
  if (active)
    for (int d = lane; d < g.HS; d += 32) {
      k[d] = g.in(qkv, g.qrow(b, j) + g.C + h * g.HS + d);
      v[d] = g.in(qkv, g.qrow(b, j) + 2 * g.C + h * g.HS + d);
    }
  float dk[DPL], dv[DPL];
#pragma unroll
  for (int t = 0; t < DPL; ++t) dk[t] = dv[t] = 0.f;
  const int first_row = g.causal ? blockIdx.x * kWarps : 0;  // rows before the block's first key see none of them
  const size_t stats = (static_cast<size_t>(b) * g.NH + h) * g.T;
  for (int i0 = first_row; i0 < g.T; i0 += kTile) {
    __syncthreads();
    for (int e = threadIdx.x; e < kTile * g.HS; e += blockDim.x) {
      const int r = e / g.HS, d = e % g.HS, t = i0 + r;
      Qs[r * g.stride + d] = t < g.T ? g.in(qkv, g.qrow(b, t) + h * g.HS + d) : 0.f;
      dOs[r * g.stride + d] = t < g.T ? dctx[(static_cast<size_t>(b) * g.T + t) * g.C + h * g.HS + d] : 0.f;
    }
    for (int r = threadIdx.x; r < kTile; r += blockDim.x) {
      const int t = i0 + r;
      Ls[r] = t < g.T ? lse[stats + t] : 0.f;
      Ds[r] = t < g.T ? Dg[stats + t] : 0.f;
    }
    __syncthreads();
    if (!active) continue;
    // Lane takes query row i.
    const int i = i0 + lane;
    float p = 0.f, pd = 0.f, ds = 0.f;
    if (i < g.T && j < g.end(i)) {
      const bool uniform = first >= g.end(i);
      if (uniform || key_unmasked) {
        const float s = uniform ? 0.f : dot(k, Qs + lane * g.stride, g.HS) * g.scale;
        p = expf(s - Ls[lane]);
        float dp = dot(v, dOs + lane * g.stride, g.HS);
        pd = p;
        if (g.drop.active) {
          const bool keep = g.drop.kept(g.drop_index(b, h, i, j));
          dp = keep ? dp * g.drop.scale : 0.f;
          pd = keep ? p * g.drop.scale : 0.f;
        }
        ds = p * (dp - Ds[lane]);
      }
    }
    const int n = min(kTile, g.T - i0);
    for (int ii = 0; ii < n; ++ii) {
      const float pdi = __shfl_sync(0xffffffffu, pd, ii), dsi = __shfl_sync(0xffffffffu, ds, ii);
      if (pdi == 0.f && dsi == 0.f) continue;
      const float* qrow = Qs + ii * g.stride;
      const float* orow = dOs + ii * g.stride;
#pragma unroll
      for (int t = 0; t < DPL; ++t) {
        const int d = lane + 32 * t;
        if (d < g.HS) {
          dv[t] += pdi * orow[d];
          dk[t] += dsi * qrow[d];
        }
      }
    }
  }
  if (!active) return;
  float* dkr = dqkv + g.qrow(b, j) + g.C + h * g.HS;
  float* dvr = dkr + g.C;
#pragma unroll
  for (int t = 0; t < DPL; ++t) {
    const int d = lane + 32 * t;
    if (d < g.HS) {
      dkr[d] = dk[t] * g.scale;
      dvr[d] = dv[t];
    }
  }
}

// Launches kernel<DPL> for the smallest DPL with 32 * DPL >= HS.
template <template <int> class K, typename... Args>
void launch_dpl(int HS, dim3 grid, size_t smem, Args... args) {
  auto go = [&](auto kernel) {
    if (smem > 48 * 1024)
      STRATA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    kernel<<<grid, kWarps * 32, smem, stream()>>>(args...);
    STRATA_CUDA_LAUNCH_CHECK();
  };
  if (HS <= 32) go(K<1>::kernel);
  else if (HS <= 64) go(K<2>::kernel);
  else if (HS <= 128) go(K<4>::kernel);
  else go(K<8>::kernel);
}

template <int DPL>
struct Forward {
  static constexpr auto kernel = attention_forward_kernel<DPL>;
};
template <int DPL>
struct Dq {
  static constexpr auto kernel = attention_dq_kernel<DPL>;
};
template <int DPL>
struct Dkv {
  static constexpr auto kernel = attention_dkv_kernel<DPL>;
};

// ---- first query and cached attention: one block per query row, scores in memory ------------
constexpr int kRowThreads = 128;

// row[0..n) = softmax over keys with valid(j), uniform over 0..n) when none is valid;
// `row` holds the scores on entry. One block.
template <typename Valid>
__device__ void masked_softmax(float* row, int n, Valid valid) {
  __shared__ float s_max[32];
  __shared__ float s_sum[32];
  __shared__ int s_any;
  if (threadIdx.x == 0) s_any = 0;
  __syncthreads();
  float m = -INFINITY;
  for (int j = threadIdx.x; j < n; j += blockDim.x)
    if (valid(j)) {
      m = fmaxf(m, row[j]);
      s_any = 1;  // benign: every writer writes 1
    }
  m = block_max(m, s_max);
  const bool any = s_any != 0;
  float s = 0.f;
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    const float e = any ? (valid(j) ? expf(row[j] - m) : 0.f) : 1.f;
    row[j] = e;
    s += e;
  }
  const float inv = 1.f / block_sum(s, s_sum);
  for (int j = threadIdx.x; j < n; j += blockDim.x) row[j] *= inv;
  __syncthreads();
}

__global__ void first_query_kernel(Geo g, const float* __restrict__ qkv, const int32_t* __restrict__ mask,
                                   float* __restrict__ probs, float* __restrict__ ctx) {
  const int b = blockIdx.y, h = blockIdx.x;
  const size_t q = g.qrow(b, 0) + h * g.HS;
  float* P = probs + (static_cast<size_t>(b) * g.NH + h) * g.T;
  for (int j = threadIdx.x; j < g.T; j += blockDim.x) {
    const size_t k = g.qrow(b, j) + g.C + h * g.HS;
    float acc = 0.f;
    for (int d = 0; d < g.HS; ++d) acc += g.in(qkv, q + d) * g.in(qkv, k + d);
    P[j] = acc * g.scale;
  }
  __syncthreads();
  masked_softmax(P, g.T, [&](int j) { return !mask || mask[static_cast<size_t>(b) * g.T + j] != 0; });
  for (int d = threadIdx.x; d < g.HS; d += blockDim.x) {
    float acc = 0.f;
    for (int j = 0; j < g.T; ++j) acc += P[j] * g.in(qkv, g.qrow(b, j) + 2 * g.C + h * g.HS + d);
    ctx[static_cast<size_t>(b) * g.C + h * g.HS + d] = acc;
  }
}

struct CachedGeo {
  int B, Tq, Tk, ldt, C, NH, HS, ldq;
  float scale;
};

__global__ void cached_kernel(CachedGeo g, const float* __restrict__ q, const float* __restrict__ k,
                              const float* __restrict__ v, float* __restrict__ scores, float* __restrict__ ctx) {
  const int i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int end = g.Tk - g.Tq + i + 1;
  const float* qr = q + (static_cast<size_t>(b) * g.Tq + i) * g.ldq + h * g.HS;
  float* S = scores + ((static_cast<size_t>(b) * g.NH + h) * g.Tq + i) * g.Tk;
  const size_t kv = static_cast<size_t>(b) * g.ldt * g.C + h * g.HS;
  for (int j = threadIdx.x; j < g.Tk; j += blockDim.x) {
    float acc = 0.f;
    if (j < end) {
      const float* kr = k + kv + static_cast<size_t>(j) * g.C;
      for (int d = 0; d < g.HS; ++d) acc += qr[d] * kr[d];
    }
    S[j] = acc * g.scale;
  }
  __syncthreads();
  masked_softmax(S, g.Tk, [&](int j) { return j < end; });
  for (int d = threadIdx.x; d < g.HS; d += blockDim.x) {
    float acc = 0.f;
    for (int j = 0; j < end; ++j) acc += S[j] * v[kv + static_cast<size_t>(j) * g.C + d];
    ctx[(static_cast<size_t>(b) * g.Tq + i) * g.C + h * g.HS + d] = acc;
  }
}

__global__ void mask_to_float_kernel(const int32_t* mask, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = !mask || mask[i] != 0 ? 1.f : 0.f;
}

}  // namespace

// The log-sum-exp of each row, then the key mask (kernels/cuda/cuda_ops.h).
size_t attention_saved_size(const AttentionShape& s) {
  return static_cast<size_t>(s.B) * s.NH * s.T + static_cast<size_t>(s.B) * s.T;
}

void attention_forward(const AttentionShape& s, const T* qkv, const int32_t* mask, T* saved, T* ctx) {
  if (s.B <= 0 || s.T <= 0 || s.NH <= 0) return;
  const Geo g = make_geo(s);
  float* lse = saved;
  float* fmask = saved + static_cast<size_t>(s.B) * s.NH * s.T;
  const int bt = s.B * s.T;
  mask_to_float_kernel<<<ceil_div(bt, 256), 256, 0, stream()>>>(mask, fmask, bt);
  STRATA_CUDA_LAUNCH_CHECK();
  const dim3 grid(ceil_div(s.T, kWarps), s.NH, s.B);
  const size_t smem = (2 * kTile * g.stride + kWarps * g.HS) * sizeof(float);
  launch_dpl<Forward>(g.HS, grid, smem, g, qkv, static_cast<const float*>(fmask), lse, ctx);
}

void attention_backward(const AttentionShape& s, const T* qkv, const T* saved, const T* dctx, T* dqkv) {
  if (s.B <= 0 || s.T <= 0 || s.NH <= 0) return;
  const Geo g = make_geo(s);
  const float* lse = saved;
  const float* fmask = saved + static_cast<size_t>(s.B) * s.NH * s.T;
  Scratch D(static_cast<size_t>(s.B) * s.NH * s.T * sizeof(float));
  const dim3 grid(ceil_div(s.T, kWarps), s.NH, s.B);
  const size_t smem_dq = (2 * kTile * g.stride + 2 * kWarps * g.HS) * sizeof(float);
  launch_dpl<Dq>(g.HS, grid, smem_dq, g, qkv, fmask, lse, dctx, D.as<float>(), dqkv);
  const size_t smem_dkv = (2 * kTile * g.stride + 2 * kWarps * g.HS + 2 * kTile) * sizeof(float);
  launch_dpl<Dkv>(g.HS, grid, smem_dkv, g, qkv, fmask, lse, static_cast<const float*>(D.as<float>()), dctx, dqkv);
}

void attention_first_query_forward(const AttentionShape& s, const T* qkv, const int32_t* mask, T* probs, T* ctx) {
  if (s.B <= 0 || s.T <= 0 || s.NH <= 0) return;
  AttentionShape plain = s;
  plain.causal = false;
  plain.dropout_p = 0.f;
  const Geo g = make_geo(plain);
  first_query_kernel<<<dim3(s.NH, s.B), kRowThreads, 0, stream()>>>(g, qkv, mask, probs, ctx);
  STRATA_CUDA_LAUNCH_CHECK();
}

void attention_cached_forward(const CachedAttentionShape& s, const T* q, int ldq, const T* k, const T* v, T* scores,
                              T* ctx) {
  if (s.B <= 0 || s.Tq <= 0 || s.NH <= 0) return;
  const AttentionShape full{s.B, s.Tk, s.C, s.NH, 0.0f, 0, 0, true, s.scale_scores};
  CachedGeo g{s.B, s.Tq, s.Tk, s.ldt, s.C, s.NH, s.C / s.NH, ldq, static_cast<float>(full.score_scale())};
  cached_kernel<<<dim3(s.Tq, s.NH, s.B), kRowThreads, 0, stream()>>>(g, q, k, v, scores, ctx);
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace strata::kernels::cuda
