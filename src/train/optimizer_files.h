// The optimizer state inside a trainer checkpoint, in either of two layouts, and read back
// into any layout:
//
//   optimizer.safetensors            unsharded runs: one tensor per parameter and state kind,
//                                    "exp_avg.<HF name>", as PyTorch names them
//   optimizer-0000k-of-0000N.safetensors + optimizer_layout.json
//                                    ZeRO and pipeline runs: slice k of the flat state (a
//                                    data-parallel rank's slice, or a pipeline stage's window)
//                                    ("exp_avg", "exp_avg_sq": 1-D, flat offsets begin..end), and
//                                    the layout record: stage, degrees, flat size, slice size,
//                                    padding, each file's range, and the parameter table
//                                    (name, offset, shape) that maps flat offsets to names
//
// Reading takes the state of the optimizer's own slice from whichever layout the checkpoint
// has: a run may resume with another data-parallel or pipeline degree, or with sharding turned
// on or off.
#pragma once
#include <string>

#include "dist/communicator.h"
#include "dist/flat_shards.h"
#include "models/param_table.h"
#include "models/tensor_split.h"
#include "train/optimizer.h"

namespace strata {

// Unsharded: writes DIR/optimizer.safetensors from an optimizer that owns the whole buffer.
void write_optimizer_state(const std::string& dir, const ParamTable& table, Optimizer<float>& opt);

// Sliced state (ZeRO, pipeline stages): collective over `world`, every rank. Each rank's
// optimizer owns one slice [opt.begin(), opt.end()); `writes` says whether this rank's slice goes
// to disk (replicas of one slice, e.g. the data-parallel copies of an unsharded stage, write it
// once). Rank 0 writes one file per slice, in flat-offset order (receiving the others' slices one
// at a time, so it never holds more than one extra slice), and the layout record into DIR; the
// other ranks send theirs and ignore DIR. The written slices must cover the flat buffer.
struct SliceLayout {
  int zero_stage = 0;
  int data_parallel_degree = 1, pipeline_parallel_degree = 1;
  int data_parallel_rank = 0, pipeline_stage = 0;  // this rank's
  const dist::FlatShards* shards = nullptr;        // this rank's stage window cut into slices
};
void write_optimizer_slices(const std::string& dir, const ParamTable& table, Optimizer<float>& opt, bool writes,
                            const SliceLayout& layout, dist::Communicator& world);

// Tensor-parallel runs: collective over `world`, every rank. Writes the unsplit layout
// (optimizer.safetensors, one tensor per parameter with HF's shape), so that any layout can
// resume from it: per parameter, every rank puts the values its optimizer owns into the whole
// tensor at its slice's place and the sum lands at rank 0, which writes. `writes`: whether this
// rank's values count (one replica of each); replicated parameters count from tensor rank 0
// only. Rank 0 holds the whole state while it writes.
void write_optimizer_unsplit(const std::string& dir, const ParamTable& table, const TensorSplit& split,
                             Optimizer<float>& opt, bool writes, dist::Communicator& world);

// Fills opt's slice of the state (and its step count) from the checkpoint in DIR, whatever
// its layout, and whatever the tensor-parallel split of this run (`split`: this rank's slices
// of the whole tensors the checkpoint holds). Errors name the file and what does not fit
// (another model, another optimizer, a missing or truncated slice).
void read_optimizer_state(const std::string& dir, const ParamTable& table, Optimizer<float>& opt,
                          const TensorSplit& split = {});

}  // namespace strata
