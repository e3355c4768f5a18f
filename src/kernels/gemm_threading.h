// How an fp32 matrix product (kernels::gemm and the layers on it) uses the threads; the
// policy behind HF's full_determinism (docs/numerics.md, "Determinism"):
//   FixedTiles  C is cut into tiles by shape alone and each runs single-threaded: the same
//               bits for any thread count. The kernels' default, and full_determinism's.
//   Library     oneDNN threads the whole product itself, at its own speed: the same bits run
//               after run at one thread count (oneDNN is run-to-run deterministic in a fixed
//               environment), other bits at another. `strata train`'s default.
// fp64 products (the gradient checks) always use FixedTiles.
#pragma once

namespace strata::kernels {

enum class GemmThreading { FixedTiles, Library };
void set_gemm_threading(GemmThreading mode);
GemmThreading gemm_threading();

}  // namespace strata::kernels
