// The parallel layout of a job: world = data x pipeline x tensor ranks, and which rank sits
// where. SageMaker's placement_strategy fixes the order: in a permutation of "DPT" the
// right-most axis varies fastest over consecutive ranks and the left-most slowest, so the
// right-most axis's groups are neighbouring ranks (the same host, when the launcher fills
// hosts in rank order); "cluster" = "DPT", "spread" = "TPD". With D P T of sizes 2 2 2,
// "DPT" gives rank 5 = (d 1, p 0, t 1) and "PTD" gives rank 5 = (d 1, p 1, t 0).
//
// Pure arithmetic (no MPI): make_process_groups() (process_groups.h) turns a grid into one
// sub-communicator per axis.
#pragma once
#include <array>
#include <string>
#include <vector>

namespace strata::dist {

enum class Axis { Data = 0, Pipeline = 1, Tensor = 2 };
const char* axis_name(Axis a);  // "data", "pipeline", "tensor"

// A rank's index along each axis.
struct GridCoord {
  int d = 0, p = 0, t = 0;
  int operator[](Axis a) const { return a == Axis::Data ? d : a == Axis::Pipeline ? p : t; }
  bool operator==(const GridCoord&) const = default;
};

// "cluster" -> "DPT", "spread" -> "TPD", a permutation of D, P, T (any case) -> upper case;
// anything else throws strata::Error naming the accepted values.
std::string placement_order(const std::string& placement_strategy);

class RankGrid {
 public:
  // Checks that pp * tp divides world_size (the data-parallel degree is the quotient) and that
  // every degree is positive; errors name the options (pipeline_parallel_degree / partitions,
  // tensor_parallel_degree). `placement` is a placement_strategy value.
  RankGrid(int world_size, int pipeline_degree, int tensor_degree, const std::string& placement);

  int world_size() const { return world_; }
  int size(Axis a) const { return sizes_[static_cast<size_t>(a)]; }
  const std::string& order() const { return order_; }  // e.g. "DPT"

  GridCoord coord(int rank) const;
  int rank_of(const GridCoord& c) const;
  // The ranks that differ from `rank` only along `a`, by their index along `a`.
  std::vector<int> group(Axis a, int rank) const;
  // Which group along `a` the rank belongs to: 0 .. world/size(a)-1, the same for every rank
  // of one group (the color of a communicator split).
  int group_index(Axis a, int rank) const;
  // True when every group along `a` has all its ranks on one host; host_of_rank[r] is any
  // label of rank r's host.
  bool within_hosts(Axis a, const std::vector<std::string>& host_of_rank) const;

  // The start-of-job banner: the degrees, the placement, which axes stay inside a host, then
  // one line per rank with its coordinates and host.
  std::string describe(const std::vector<std::string>& host_of_rank) const;

 private:
  int stride(Axis a) const;  // rank distance between neighbours along a

  int world_;
  std::array<int, 3> sizes_;  // by Axis
  std::string order_;
};

// Host labels as a launcher that fills hosts in rank order places ranks: local_world_size
// ranks on each host ("host0", "host1", ...). The tests use it; a job gathers real host names.
std::vector<std::string> block_hosts(int world_size, int local_world_size);

}  // namespace strata::dist
