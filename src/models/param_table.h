// Name -> (offset, shape) table over one flat parameter buffer. Names are Hugging Face's
// (e.g. "bert.encoder.layer.0.attention.self.query.weight"). Sharding, buckets, checkpoint
// I/O and memory estimates are all walks over this table.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

struct ParamEntry {
  std::string name;
  std::vector<int64_t> shape;
  size_t offset;
  size_t numel;
  // Trainer convention (HF Trainer get_decay_parameter_names): no weight decay on biases
  // and LayerNorm weights.
  bool no_decay;
  // Tensor parallelism (models/tensor_split.h): `shape` is this rank's slice of a tensor of
  // `global_shape` (HF's), cut along `split_dim` into `split_parts` equal blocks (3 for a fused
  // q | k | v), each block cut into one equal piece per tensor-parallel rank. split_dim -1:
  // the tensor is whole on every rank (replicated), shape == global_shape.
  std::vector<int64_t> global_shape;
  int split_dim = -1;
  int split_parts = 1;
  bool replicated() const { return split_dim < 0; }
};

class ParamTable {
 public:
  // Appends a parameter; returns its offset. Entries added in sequence are contiguous,
  // which the models use to fuse q/k/v into one GEMM.
  size_t add(std::string name, std::vector<int64_t> shape, bool no_decay);
  // A tensor-parallel slice: `shape` is the whole tensor's, cut along split_dim by `degree`.
  size_t add_split(std::string name, std::vector<int64_t> global_shape, bool no_decay, int split_dim, int parts,
                   int degree);
  const ParamEntry* find(std::string_view name) const;
  const ParamEntry& at(std::string_view name) const;  // throws strata::Error if absent
  const std::vector<ParamEntry>& entries() const { return entries_; }
  size_t total() const { return total_; }

 private:
  std::vector<ParamEntry> entries_;
  std::map<std::string, size_t, std::less<>> index_;
  size_t total_ = 0;
};

}  // namespace strata
