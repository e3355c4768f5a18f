// What one rank's training step costs per layer unit (embeddings, each block, head), measured
// on this machine: the forward and backward time of each unit on a batch of B x T, the bytes a
// tensor-parallel rank all-reduces in it, the parameters it owns, and AdamW's time per
// parameter. `strata plan` and `strata study` project pipeline and tensor-parallel layouts
// from it (study/projection.h); it is not a benchmark (bench/train_step.cpp is).
//
// The model runs in three parts, each with a state of its own as a pipeline stage's would be:
// the embeddings, every block, the head (its forward includes the loss). The blocks of these
// architectures all have the same shapes, so each gets the blocks' time divided by their
// number (an encoder-decoder's decoder blocks cost more than its encoder's: each gets the
// mean). A tensor-parallel rank is measured as rank 0 of `tp`, with collectives that only
// count what they would send: its compute is real, its communication is the projection's to
// model (from the links). The batch is synthetic, full length (no padding), with labels for
// the model's task, and dropout as the config sets it.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/config.h"

namespace strata {

struct UnitWork {
  double forward_s = 0, backward_s = 0;
  double tp_bytes = 0;  // all-reduced over the tensor-parallel group, forward and backward
  double tp_calls = 0;  // how many all-reduces that takes (a block's share of the blocks' calls)
  double owned_values = 0;  // parameter values this unit is the first to read (it owns them)
  double forward_ops = 0, backward_ops = 0;  // op calls (kernels::op_calls): a GPU launches a kernel or more for each
};

struct UnitProfile {
  int B = 0, T = 0, tp = 1, threads = 1;
  std::vector<UnitWork> units;  // 0 the embeddings, 1..L the blocks, L+1 the head
  double optimizer_s_per_value = 0;  // AdamW over the rank's table, per parameter value
  double boundary_bytes = 0;         // the largest boundary one unit passes the next (and its gradient back)
  // A parameter read by units that may fall in different pipeline stages (a tied embedding):
  // each step the borrowing stage sends its gradient to the owner and gets the values back.
  struct Shared {
    double bytes = 0;
    std::vector<int> units;
  };
  std::vector<Shared> shared;

  double layer_units_s() const;   // every unit's forward and backward
  double step_compute_s() const;  // those, and AdamW over every owned value
  nlohmann::json to_json() const;
  static UnitProfile from_json(const nlohmann::json& j);
};

// Measures `cfg`'s units on a B x T batch as rank 0 of `tp` tensor-parallel ranks (1: the whole
// model), with `threads` threads, the median of `repeats` steps after one warm-up step.
UnitProfile profile_units(ModelConfig cfg, int B, int T, int tp, int threads, int repeats = 5);

}  // namespace strata
