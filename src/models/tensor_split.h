// Tensor parallelism as the parameter table sees it: which tensor-parallel rank this model is,
// and how a table entry's slice (ParamEntry::split_dim / split_parts) sits in the whole HF
// tensor. Loading slices the whole tensor, saving puts the slices back: both are these two
// walks, so a checkpoint is always the unsplit HF layout.
#pragma once
#include <initializer_list>
#include <string>
#include <utility>

#include "models/param_table.h"

namespace strata {

struct TensorSplit {
  int degree = 1, rank = 0;
  bool split() const { return degree > 1; }
};

// Fails unless the split's degree divides each value, given with its config.json field name: the
// heads and widths a model cuts into one equal share per tensor-parallel rank. `who` names the
// model in the message.
void check_equal_shares(const TensorSplit& s, const std::string& who,
                        std::initializer_list<std::pair<const char*, int>> fields);

// local (e.shape) <- this rank's slice of global (e.global_shape). Both in host memory: the
// whole tensor is read from a file, drawn by an initialiser or gathered to be written.
template <typename T>
void take_slice(const ParamEntry& e, const TensorSplit& s, const T* global, T* local);
// global <- local, at this rank's slice (the rest of global is left as it is).
template <typename T>
void put_slice(const ParamEntry& e, const TensorSplit& s, const T* local, T* global);
// Elements of the whole tensor.
size_t global_numel(const ParamEntry& e);

}  // namespace strata
