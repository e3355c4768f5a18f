// Branch-free float math that the compiler vectorises (no library calls in the loop), for
// the element-wise kernels: exp, the normal CDF and tanh. Accuracy is a few ulp, far below
// the fp32 noise of the products around them; fp64 (gradient checks) uses libm.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

namespace strata::kernels::vec {

// libm's exp, so that kernels templated on the element type call vec::exp for both.
inline double exp(double x) { return std::exp(x); }

// exp(x), Cephes' expf scheme: x = n ln2 + r, |r| <= ln2/2, degree-6 polynomial, 2^n by
// exponent bits. Inputs below -87.3 flush to 0, above 88.7 clamp (callers never go there).
inline float exp(float x) {
  x = x < -87.3f ? -87.3f : (x > 88.7f ? 88.7f : x);
  // n = x / ln2 rounded to the nearest integer (ties to even, as nearbyint): adding and
  // subtracting 1.5 * 2^23 leaves no fraction bits. SSE2 has no rounding instruction, so
  // nearbyint would be a libm call per element in the baseline kernels; this vectorises on
  // every ISA and gives the same n.
  constexpr float kRound = 12582912.0f;
  const float n = (x * 1.44269504088896341f + kRound) - kRound;
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  // The degree-5 polynomial by Estrin's scheme (pairs, then pairs of pairs), a shorter
  // dependency chain than Horner's, as in erfc_nonneg below; largest relative error against
  // double exp over [-87, 88] 8.4e-8 (8.3e-8 by Horner).
  const float r2 = r * r;
  const float p01 = 5.0000001201e-1f + 1.6666665459e-1f * r, p23 = 4.1665795894e-2f + 8.3334519073e-3f * r;
  const float p45 = 1.3981999507e-3f + 1.9875691500e-4f * r;
  const float p = (p01 + p23 * r2) + p45 * (r2 * r2);
  const float q = p * r2 + r + 1.0f;
  const int32_t e = static_cast<int32_t>(n) + 127;
  return q * std::bit_cast<float>(e << 23);
}

// erfc(z) for z >= 0 with relative error < 1.2e-7 (Numerical Recipes' Chebyshev fit). The
// degree-9 polynomial in t is evaluated by Estrin's scheme, pairs of terms then pairs of pairs:
// a dependency chain of 4 multiply-adds instead of Horner's 9, with the same accuracy (Phi's
// largest relative error over [-13, 13], 1.9e-5 at the far tail, comes from rounding exp's
// argument -z^2 + p either way). The chain, not the operation count, limited the GELU loops.
inline float erfc_nonneg(float z) {
  const float t = 1.0f / (1.0f + 0.5f * z);
  const float t2 = t * t, t4 = t2 * t2, t8 = t4 * t4;
  const float p01 = -1.26551223f + 1.00002368f * t, p23 = 0.37409196f + 0.09678418f * t;
  const float p45 = -0.18628806f + 0.27886807f * t, p67 = -1.13520398f + 1.48851587f * t;
  const float p89 = -0.82215223f + 0.17087277f * t;
  const float p = ((p01 + p23 * t2) + (p45 + p67 * t2) * t4) + p89 * t8;
  return t * vec::exp(-z * z + p);
}

// Standard normal CDF, Phi(x) = erfc(-x/sqrt2)/2, accurate relative to Phi on both tails,
// which is what GELU = x Phi(x) needs.
inline float normal_cdf(float x) {
  const float h = 0.5f * erfc_nonneg(std::fabs(x) * 0.70710678118654752f);
  return x < 0.0f ? h : 1.0f - h;
}

inline float tanh(float x) {
  const float e = vec::exp(-2.0f * std::fabs(x));
  const float t = (1.0f - e) / (1.0f + e);
  return x < 0.0f ? -t : t;
}

}  // namespace strata::kernels::vec
