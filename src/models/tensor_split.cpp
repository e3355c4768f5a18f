#include "models/tensor_split.h"

#include <algorithm>

#include "util/error.h"

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

// The slice as a strided block of the global tensor: `rows` runs of `cols` contiguous
// elements, run i at global offset first + i * ld_global and local offset i * cols. Run (o, p)
// of the [outer, parts] grid starts at global row p * D/parts + rank * piece of block o, and
// since D = parts * D/parts the runs are evenly spaced: ld_global = D/parts * inner.
struct Runs {
  size_t first = 0, ld_global = 0, rows = 1, cols = 0;
};

Runs runs(const ParamEntry& e, const TensorSplit& s) {
  if (e.replicated() || !s.split()) return {0, e.numel, 1, e.numel};
  const Geometry g = geometry(e, s);
  return {static_cast<size_t>(s.rank) * g.piece * g.inner, g.D / g.parts * g.inner, g.outer * g.parts,
          g.piece * g.inner};
}
}  // namespace

void check_equal_shares(const TensorSplit& s, const std::string& who,
                        std::initializer_list<std::pair<const char*, int>> fields) {
  for (const auto& [field, value] : fields)
    if (value % s.degree != 0)
      fail(who, ": tensor_parallel_degree ", s.degree, " does not divide ", field, " (", value,
           " in config.json): each tensor-parallel rank takes an equal share of it");
}

size_t global_numel(const ParamEntry& e) {
  size_t n = 1;
  for (int64_t d : e.global_shape) n *= static_cast<size_t>(d);
  return n;
}

template <typename T>
void take_slice(const ParamEntry& e, const TensorSplit& s, const T* global, T* local) {
  const Runs r = runs(e, s);
  for (size_t i = 0; i < r.rows; ++i) std::copy_n(global + r.first + i * r.ld_global, r.cols, local + i * r.cols);
}

template <typename T>
void put_slice(const ParamEntry& e, const TensorSplit& s, const T* local, T* global) {
  const Runs r = runs(e, s);
  for (size_t i = 0; i < r.rows; ++i) std::copy_n(local + i * r.cols, r.cols, global + r.first + i * r.ld_global);
}

template void take_slice<float>(const ParamEntry&, const TensorSplit&, const float*, float*);
template void take_slice<double>(const ParamEntry&, const TensorSplit&, const double*, double*);
template void put_slice<float>(const ParamEntry&, const TensorSplit&, const float*, float*);
template void put_slice<double>(const ParamEntry&, const TensorSplit&, const double*, double*);

}  // namespace strata
