// The rank grid (dist/rank_grid.h) against SageMaker's documented placements, every
// permutation of "DPT", host locality, and errors; the flat slices of ZeRO (dist/flat_shards.h).
// The sub-communicators built from a grid run under mpirun in tests/mpi/dist_check.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "dist/flat_shards.h"
#include "dist/rank_grid.h"
#include "util/error.h"

namespace strata::dist {
namespace {

std::string error_of(int world, int pp, int tp, const std::string& placement) {
  try {
    RankGrid(world, pp, tp, placement);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// SageMaker's tables for 8 devices with tp = pp = rdp = 2 (smd_model_parallel_general.rst,
// "Placement Strategy with Tensor Parallelism"): rank -> (rdp, pp, tp).
TEST(DistRankGrid, MatchesSageMakersDptAndPtdTables) {
  const std::vector<GridCoord> dpt = {{0, 0, 0}, {0, 0, 1}, {0, 1, 0}, {0, 1, 1},
                                      {1, 0, 0}, {1, 0, 1}, {1, 1, 0}, {1, 1, 1}};
  const std::vector<GridCoord> ptd = {{0, 0, 0}, {1, 0, 0}, {0, 0, 1}, {1, 0, 1},
                                      {0, 1, 0}, {1, 1, 0}, {0, 1, 1}, {1, 1, 1}};
  const RankGrid g_dpt(8, 2, 2, "DPT"), g_ptd(8, 2, 2, "PTD");
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(g_dpt.coord(r), dpt[static_cast<size_t>(r)]) << "DPT rank " << r;
    EXPECT_EQ(g_ptd.coord(r), ptd[static_cast<size_t>(r)]) << "PTD rank " << r;
  }
}

// SageMaker's ranking basics without tensor parallelism: 8 processes, partitions 2.
TEST(DistRankGrid, ClusterAndSpreadAsSageMakerDescribesThem) {
  const RankGrid spread(8, 2, 1, "spread"), cluster(8, 2, 1, "cluster");
  EXPECT_EQ(spread.order(), "TPD");
  EXPECT_EQ(cluster.order(), "DPT");
  // spread: model-parallel groups [0,4] [1,5] [2,6] [3,7]; data-parallel groups [0..3] [4..7].
  EXPECT_EQ(spread.group(Axis::Pipeline, 6), (std::vector<int>{2, 6}));
  EXPECT_EQ(spread.group(Axis::Data, 6), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(spread.coord(6).d, 2);  // "the dp_rank of process 6 is 2"
  // cluster: model-parallel groups [0,1] [2,3] ...; data-parallel groups [0,2,4,6] [1,3,5,7].
  EXPECT_EQ(cluster.group(Axis::Pipeline, 6), (std::vector<int>{6, 7}));
  EXPECT_EQ(cluster.group(Axis::Data, 3), (std::vector<int>{1, 3, 5, 7}));
}

TEST(DistRankGrid, EveryPermutationIsABijectionWithConsistentGroups) {
  std::string order = "DPT";
  int permutations = 0;
  do {
    SCOPED_TRACE(order);
    ++permutations;
    const RankGrid g(12, 3, 2, order);  // data 2 x pipeline 3 x tensor 2
    ASSERT_EQ(g.size(Axis::Data), 2);
    std::set<std::vector<int>> coords;
    for (int r = 0; r < 12; ++r) {
      const GridCoord c = g.coord(r);
      EXPECT_EQ(g.rank_of(c), r);
      coords.insert({c.d, c.p, c.t});
    }
    EXPECT_EQ(coords.size(), 12u);
    // The right-most axis varies fastest: ranks 0 and 1 differ along it only.
    const Axis fastest = order.back() == 'D' ? Axis::Data : order.back() == 'P' ? Axis::Pipeline : Axis::Tensor;
    EXPECT_EQ(g.group(fastest, 0)[1], 1);
    for (Axis a : {Axis::Data, Axis::Pipeline, Axis::Tensor}) {
      std::set<int> colors;
      for (int r = 0; r < 12; ++r) {
        const std::vector<int> grp = g.group(a, r);
        ASSERT_EQ(static_cast<int>(grp.size()), g.size(a));
        EXPECT_EQ(grp[static_cast<size_t>(g.coord(r)[a])], r);  // ordered by the coordinate along a
        for (int q : grp) {
          EXPECT_EQ(g.group_index(a, q), g.group_index(a, r));  // one color per group
          for (Axis b : {Axis::Data, Axis::Pipeline, Axis::Tensor}) {
            if (b != a) {
              EXPECT_EQ(g.coord(q)[b], g.coord(r)[b]);
            }
          }
        }
        colors.insert(g.group_index(a, r));
      }
      EXPECT_EQ(static_cast<int>(colors.size()), 12 / g.size(a));
    }
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(permutations, 6);
}

// Two hosts of 4 ranks (block placement, as mpirun fills hosts): the right-most axes stay inside.
TEST(DistRankGrid, TellsWhichAxesStayInsideAHost) {
  const std::vector<std::string> hosts = block_hosts(8, 4);
  EXPECT_EQ(hosts[3], "host0");
  EXPECT_EQ(hosts[4], "host1");
  const RankGrid cluster(8, 2, 2, "cluster");  // T stride 1, P stride 2, D stride 4
  EXPECT_TRUE(cluster.within_hosts(Axis::Tensor, hosts));
  EXPECT_TRUE(cluster.within_hosts(Axis::Pipeline, hosts));
  EXPECT_FALSE(cluster.within_hosts(Axis::Data, hosts));
  const RankGrid spread(8, 2, 2, "spread");  // D stride 1, P stride 2, T stride 4
  EXPECT_TRUE(spread.within_hosts(Axis::Data, hosts));
  EXPECT_FALSE(spread.within_hosts(Axis::Tensor, hosts));
  const RankGrid pdt(8, 2, 2, "PDT");  // T stride 1, D stride 2, P stride 4
  EXPECT_TRUE(pdt.within_hosts(Axis::Data, hosts));
  EXPECT_FALSE(pdt.within_hosts(Axis::Pipeline, hosts));
  // Hosts of 2 ranks: only the fastest axis stays inside.
  EXPECT_TRUE(cluster.within_hosts(Axis::Tensor, block_hosts(8, 2)));
  EXPECT_FALSE(cluster.within_hosts(Axis::Pipeline, block_hosts(8, 2)));

  const std::string banner = cluster.describe(hosts);
  EXPECT_NE(banner.find("8 processes = data 2 x pipeline 2 x tensor 2, placement DPT (T varies fastest over ranks); "
                        "groups inside a host: pipeline, tensor; across hosts: data"),
            std::string::npos)
      << banner;
  EXPECT_NE(banner.find("     5     1     0       1  host1"), std::string::npos) << banner;
}

TEST(DistRankGrid, PlacementStrings) {
  EXPECT_EQ(placement_order("tpd"), "TPD");
  EXPECT_EQ(placement_order("PDT"), "PDT");
  for (const char* bad : {"DPX", "DP", "DPTT", "clustered", ""}) {
    try {
      placement_order(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("is not cluster, spread or a permutation of the letters D, P, T"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(DistRankGrid, DegreesMustDivideTheWorld) {
  EXPECT_NE(error_of(6, 4, 1, "cluster")
                .find("the job has 6 processes, which pipeline_parallel_degree (partitions) 4 x tensor_parallel_degree "
                      "1 = 4 does not divide"),
            std::string::npos);
  EXPECT_NE(error_of(4, 1, 3, "cluster").find("x tensor_parallel_degree 3 = 3 does not divide"), std::string::npos);
  EXPECT_NE(error_of(4, 0, 1, "cluster").find("pipeline_parallel_degree (partitions) must be at least 1, got 0"),
            std::string::npos);
  EXPECT_EQ(error_of(1, 1, 1, "cluster"), "");
  EXPECT_EQ(RankGrid(6, 3, 1, "cluster").size(Axis::Data), 2);
}

TEST(DistFlatShards, SlicesCoverTheBufferOnCacheLines) {
  const FlatShards s(100, 4);  // ceil(100 / 4) = 25 -> 32
  EXPECT_EQ(s.shard_size(), 32u);
  EXPECT_EQ(s.sizes(), (std::vector<size_t>{32, 32, 32, 4}));
  EXPECT_EQ(s.padding(), 28u);
  EXPECT_EQ(s.begin(3), 96u);
  EXPECT_EQ(s.owner(95), 2);
  EXPECT_EQ(s.owner(96), 3);
  const FlatShards small(40, 4);  // the last rank's slice is empty
  EXPECT_EQ(small.sizes(), (std::vector<size_t>{16, 16, 8, 0}));
  EXPECT_EQ(small.begin(3), small.end(3));
  const FlatShards one(1000, 1);
  EXPECT_EQ(one.begin(0), 0u);
  EXPECT_EQ(one.end(0), 1000u);
  EXPECT_EQ(FlatShards(4096, 4).padding(), 0u);
  EXPECT_THROW(FlatShards(10, 0), Error);
  EXPECT_THROW(s.owner(100), Error);
}

}  // namespace
}  // namespace strata::dist
