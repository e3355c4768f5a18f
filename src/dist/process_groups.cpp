#include "dist/process_groups.h"

#include "util/error.h"

namespace strata::dist {

ProcessGroups make_process_groups(Communicator& world, const RankGrid& grid) {
  STRATA_CHECK(world.size() == grid.world_size(), "the rank grid has ", grid.world_size(), " ranks, the job ",
               world.size());
  const int r = world.rank();
  const GridCoord c = grid.coord(r);
  ProcessGroups g;
  // Every rank splits in the same order: split is collective over `world`.
  g.data = world.split(grid.group_index(Axis::Data, r), c.d);
  g.pipeline = world.split(grid.group_index(Axis::Pipeline, r), c.p);
  g.tensor = world.split(grid.group_index(Axis::Tensor, r), c.t);
  return g;
}

}  // namespace strata::dist
