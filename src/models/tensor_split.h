// Tensor parallelism as the parameter table sees it: which tensor-parallel rank this model is,
// and how a table entry's slice (ParamEntry::split_dim / split_parts) sits in the whole HF
// tensor. Loading slices the whole tensor, saving puts the slices back: both are these two
// walks, so a checkpoint is always the unsplit HF layout.
#pragma once
#include "models/param_table.h"

namespace strata {

struct TensorSplit {
  int degree = 1, rank = 0;
  bool split() const { return degree > 1; }
};

// local (e.shape) <- this rank's slice of global (e.global_shape).
template <typename T>
void take_slice(const ParamEntry& e, const TensorSplit& s, const T* global, T* local);
// global <- local, at this rank's slice (the rest of global is left as it is).
template <typename T>
void put_slice(const ParamEntry& e, const TensorSplit& s, const T* local, T* global);
// Elements of the whole tensor.
size_t global_numel(const ParamEntry& e);

}  // namespace strata
