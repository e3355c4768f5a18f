// One communicator per axis of the rank grid, made with Communicator::split: the ranks that
// differ only along that axis. ZeRO shards over `data`; pipeline stages send activations along
// `pipeline`; tensor-parallel layers all-reduce over `tensor`.
#pragma once
#include <memory>

#include "dist/communicator.h"
#include "dist/rank_grid.h"

namespace strata::dist {

struct ProcessGroups {
  std::unique_ptr<Communicator> data, pipeline, tensor;
  Communicator& along(Axis a) const { return a == Axis::Data ? *data : a == Axis::Pipeline ? *pipeline : *tensor; }
};

// Collective over `world`: every rank calls it with the same grid. Each group's rank is the
// coordinate along its axis.
ProcessGroups make_process_groups(Communicator& world, const RankGrid& grid);

}  // namespace strata::dist
