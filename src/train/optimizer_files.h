// The optimizer state inside a trainer checkpoint, in either of two layouts, and read back
// into any layout:
//
//   optimizer.safetensors            unsharded runs: one tensor per parameter and state kind,
//                                    "exp_avg.<HF name>", as PyTorch names them
//   optimizer-0000k-of-0000N.safetensors + optimizer_layout.json
//                                    ZeRO runs: data-parallel rank k-1's slice of the flat state
//                                    ("exp_avg", "exp_avg_sq": 1-D, flat offsets begin..end), and
//                                    the layout record: stage, degrees, flat size, slice size,
//                                    padding, each file's range, and the parameter table
//                                    (name, offset, shape) that maps flat offsets to names
//
// Reading takes the state of the optimizer's own slice from whichever layout the checkpoint
// has: a run may resume with another data-parallel degree, or with sharding turned on or off.
#pragma once
#include <string>

#include "dist/communicator.h"
#include "dist/flat_shards.h"
#include "models/param_table.h"
#include "train/optimizer.h"

namespace strata {

// Unsharded: writes DIR/optimizer.safetensors from an optimizer that owns the whole buffer.
void write_optimizer_state(const std::string& dir, const ParamTable& table, Optimizer<float>& opt);

// ZeRO: collective over the data-parallel group `comm`. Rank 0 writes every rank's slice
// file (receiving the others' slices one at a time, so it never holds more than one extra
// slice) and the layout record into DIR; the other ranks send theirs and ignore DIR.
void write_optimizer_shards(const std::string& dir, const ParamTable& table, Optimizer<float>& opt,
                            const dist::FlatShards& shards, int zero_stage, dist::Communicator& comm);

// Fills opt's slice of the state (and its step count) from the checkpoint in DIR, whatever
// its layout. Errors name the file and what does not fit (another model, another optimizer,
// a missing or truncated slice).
void read_optimizer_state(const std::string& dir, const ParamTable& table, Optimizer<float>& opt);

}  // namespace strata
