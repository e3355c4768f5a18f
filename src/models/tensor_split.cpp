#include "models/tensor_split.h"

#include <algorithm>

namespace strata {

namespace {
// The tensor as [outer, D, inner] around the split dimension D = parts x blocks of `piece`
// rows each cut `degree` ways: local row (p, j) is global row p * D/parts + rank * piece + j.
struct Geometry {
  size_t outer = 1, inner = 1, D = 0, parts = 1, piece = 0;
};

Geometry geometry(const ParamEntry& e, const TensorSplit& s) {
  Geometry g;
  const size_t k = static_cast<size_t>(e.split_dim);
  for (size_t i = 0; i < e.global_shape.size(); ++i) {
    const auto d = static_cast<size_t>(e.global_shape[i]);
    if (i < k) g.outer *= d;
    if (i > k) g.inner *= d;
  }
  g.D = static_cast<size_t>(e.global_shape[k]);
  g.parts = static_cast<size_t>(e.split_parts);
  g.piece = g.D / g.parts / static_cast<size_t>(s.degree);
  return g;
}

// Calls fn(global offset, local offset, count) for every contiguous run of the slice.
template <typename Fn>
void for_each_run(const ParamEntry& e, const TensorSplit& s, Fn fn) {
  if (e.replicated() || !s.split()) {
    fn(size_t{0}, size_t{0}, e.numel);
    return;
  }
  const Geometry g = geometry(e, s);
  const size_t local_D = g.D / static_cast<size_t>(s.degree), run = g.piece * g.inner;
  for (size_t o = 0; o < g.outer; ++o)
    for (size_t p = 0; p < g.parts; ++p) {
      const size_t global_row = p * (g.D / g.parts) + static_cast<size_t>(s.rank) * g.piece;
      fn((o * g.D + global_row) * g.inner, (o * local_D + p * g.piece) * g.inner, run);
    }
}
}  // namespace

size_t global_numel(const ParamEntry& e) {
  size_t n = 1;
  for (int64_t d : e.global_shape) n *= static_cast<size_t>(d);
  return n;
}

template <typename T>
void take_slice(const ParamEntry& e, const TensorSplit& s, const T* global, T* local) {
  for_each_run(e, s, [&](size_t g, size_t l, size_t n) { std::copy_n(global + g, n, local + l); });
}

template <typename T>
void put_slice(const ParamEntry& e, const TensorSplit& s, const T* local, T* global) {
  for_each_run(e, s, [&](size_t g, size_t l, size_t n) { std::copy_n(local + l, n, global + g); });
}

template void take_slice<float>(const ParamEntry&, const TensorSplit&, const float*, float*);
template void take_slice<double>(const ParamEntry&, const TensorSplit&, const double*, double*);
template void put_slice<float>(const ParamEntry&, const TensorSplit&, const float*, float*);
template void put_slice<double>(const ParamEntry&, const TensorSplit&, const double*, double*);

}  // namespace strata
