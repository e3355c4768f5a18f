// detect_layout() under each launcher's environment, its errors, and the single-process
// communicator. The MPI communicator is exercised under mpirun by tests/mpi/dist_check.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dist/communicator.h"
#include "util/error.h"

namespace strata::dist {
namespace {

// Every variable detect_layout() reads; the fixture clears them and restores them after.
const char* const kVars[] = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                             "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
                             "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NODEID", "RANK", "WORLD_SIZE",
                             "LOCAL_RANK", "LOCAL_WORLD_SIZE"};

class DistLayout : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kVars) {
      if (const char* old = std::getenv(v)) saved_[v] = old;
      unsetenv(v);
    }
  }
  void TearDown() override {
    for (const char* v : kVars) unsetenv(v);
    for (const auto& [k, v] : saved_) setenv(k.c_str(), v.c_str(), 1);
  }
  static void set(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [k, v] : vars) setenv(k, v, 1);
  }
  // The message of the Error detect_layout() throws ("" if it does not).
  static std::string error() {
    try {
      detect_layout();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

 private:
  std::map<std::string, std::string> saved_;
};

TEST_F(DistLayout, NoLauncherMeansOneProcess) {
  const Layout l = detect_layout();
  EXPECT_EQ(l.rank, 0);
  EXPECT_EQ(l.world_size, 1);
  EXPECT_EQ(l.local_rank, 0);
  EXPECT_EQ(l.local_world_size, 1);
  EXPECT_EQ(l.source, "single process");
  EXPECT_EQ(l.describe(), "single process");
}

TEST_F(DistLayout, OpenMpi) {
  set({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  const Layout l = detect_layout();
  EXPECT_EQ(l.rank, 5);
  EXPECT_EQ(l.world_size, 8);
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_EQ(l.local_world_size, 4);
  EXPECT_EQ(l.source, "OpenMPI");
  EXPECT_EQ(l.describe(), "rank 5 of 8 (local rank 1 of 4 on this node; OpenMPI)");
}

// mpirun inside a Slurm allocation: both sets are present, mpirun's describe its processes.
TEST_F(DistLayout, OpenMpiBeforeSlurmBeforeTorchrun) {
  set({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_LOCALID", "0"}, {"SLURM_NTASKS_PER_NODE", "1"},
       {"RANK", "1"}, {"WORLD_SIZE", "3"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "3"}});
  EXPECT_EQ(detect_layout().source, "Slurm");
  set({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  const Layout l = detect_layout();
  EXPECT_EQ(l.source, "OpenMPI");
  EXPECT_EQ(l.rank, 2);
}

TEST_F(DistLayout, SlurmWithTasksPerNodeGiven) {
  set({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "1"}, {"SLURM_NTASKS_PER_NODE", "2"}});
  const Layout l = detect_layout();
  EXPECT_EQ(l.rank, 3);
  EXPECT_EQ(l.world_size, 4);
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_EQ(l.local_world_size, 2);
  EXPECT_EQ(l.source, "Slurm");
}

// Without --ntasks-per-node, srun describes the tasks of every node in SLURM_TASKS_PER_NODE.
TEST_F(DistLayout, SlurmTasksPerNodeList) {
  set({{"SLURM_PROCID", "6"}, {"SLURM_NTASKS", "7"}, {"SLURM_LOCALID", "0"}, {"SLURM_TASKS_PER_NODE", "2(x3),1"}});
  for (const auto& [node, tasks] : std::vector<std::pair<const char*, int>>{{"0", 2}, {"2", 2}, {"3", 1}}) {
    setenv("SLURM_NODEID", node, 1);
    EXPECT_EQ(detect_layout().local_world_size, tasks) << "node " << node;
  }
  setenv("SLURM_NODEID", "4", 1);
  EXPECT_NE(error().find("SLURM_NODEID=4 is past the 4 nodes of SLURM_TASKS_PER_NODE='2(x3),1'"), std::string::npos)
      << error();
  setenv("SLURM_TASKS_PER_NODE", "2(x3", 1);
  EXPECT_NE(error().find("SLURM_TASKS_PER_NODE='2(x3' is not of the form"), std::string::npos) << error();
  unsetenv("SLURM_TASKS_PER_NODE");
  EXPECT_NE(error().find("SLURM_NTASKS_PER_NODE and SLURM_TASKS_PER_NODE are not set"), std::string::npos) << error();
}

TEST_F(DistLayout, TorchrunEnv) {
  set({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"}});
  const Layout l = detect_layout();
  EXPECT_EQ(l.rank, 1);
  EXPECT_EQ(l.world_size, 2);
  EXPECT_EQ(l.source, "torchrun env");
  EXPECT_EQ(l.describe(), "rank 1 of 2 (local rank 1 of 2 on this node; torchrun env)");
}

TEST_F(DistLayout, ErrorsNameTheVariable) {
  set({{"OMPI_COMM_WORLD_RANK", "4"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}});
  EXPECT_EQ(error(), "environment variable OMPI_COMM_WORLD_RANK=4 is not below OMPI_COMM_WORLD_SIZE=4");
  set({{"OMPI_COMM_WORLD_RANK", "two"}});
  EXPECT_EQ(error(), "environment variable OMPI_COMM_WORLD_RANK='two' is not a non-negative integer");
  set({{"OMPI_COMM_WORLD_RANK", "-1"}});
  EXPECT_EQ(error(), "environment variable OMPI_COMM_WORLD_RANK='-1' is not a non-negative integer");
  set({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "0"}});
  EXPECT_NE(error().find("OMPI_COMM_WORLD_SIZE=0"), std::string::npos) << error();
  set({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(error(), "environment variable OMPI_COMM_WORLD_LOCAL_RANK=2 is not below OMPI_COMM_WORLD_LOCAL_SIZE=2");
  set({{"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "5"}});
  EXPECT_EQ(error(), "environment variable OMPI_COMM_WORLD_LOCAL_SIZE=5 is not between 1 and OMPI_COMM_WORLD_SIZE=4");
  unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  EXPECT_NE(error().find("environment variable OMPI_COMM_WORLD_LOCAL_SIZE is not set, but OMPI_COMM_WORLD_RANK is"),
            std::string::npos)
      << error();
}

TEST_F(DistLayout, SizeWithoutRankIsAnError) {
  set({{"WORLD_SIZE", "2"}});
  EXPECT_EQ(error(), "environment variable WORLD_SIZE is set but RANK is not");
  set({{"RANK", "0"}});
  EXPECT_NE(error().find("environment variable LOCAL_RANK is not set, but RANK is"), std::string::npos) << error();
}

TEST_F(DistLayout, SingleProcessCommunicator) {
  auto c = make_single_process_communicator();
  EXPECT_EQ(c->rank(), 0);
  EXPECT_EQ(c->size(), 1);
  std::vector<float> f = {1.5f, -2.0f};
  std::vector<double> d = {3.25};
  c->all_reduce_sum(f.data(), f.size(), "f");
  c->all_reduce_sum(d.data(), d.size(), "d");
  EXPECT_EQ(f, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(d, (std::vector<double>{3.25}));
  std::vector<float> out(2, 0.0f);
  c->reduce_scatter_sum(f.data(), out.data(), 2, "rs");
  EXPECT_EQ(out, f);
  std::fill(out.begin(), out.end(), 0.0f);
  c->all_gather(f.data(), out.data(), 2, "ag");
  EXPECT_EQ(out, f);
  c->all_gather(out.data(), out.data(), 2, "ag in place");
  EXPECT_EQ(out, f);
  EXPECT_EQ(c->all_gather_bytes(std::string("a\0b", 3), "bytes"), (std::vector<std::string>{std::string("a\0b", 3)}));
  int x = 7;
  c->broadcast(&x, sizeof x, 0, "b");
  EXPECT_EQ(x, 7);
  EXPECT_THROW(c->broadcast(&x, sizeof x, 1, "b"), Error);
  EXPECT_THROW(c->send(&x, sizeof x, 0, 0), Error);
  EXPECT_THROW(c->recv(&x, sizeof x, 0, 0), Error);
  c->barrier("b");
  auto sub = c->split(3, 0);
  EXPECT_EQ(sub->size(), 1);
  EXPECT_EQ(sub->rank(), 0);
  check_same_on_all_ranks(*c, "fingerprint", "configuration");
}

TEST_F(DistLayout, SingleProcessAbortExitsWithTheCode) {
  auto c = make_single_process_communicator();
  EXPECT_EXIT(c->abort("strata: stopping", 4), ::testing::ExitedWithCode(4), "strata: stopping");
}

// Checked before MPI is touched, so this runs in the plain test process.
TEST_F(DistLayout, MpiCommunicatorRejectsABadTimeout) {
  for (double t : {0.0, -1.0, std::nan("")}) {
    try {
      make_mpi_communicator(t);
      ADD_FAILURE() << "accepted timeout " << t;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("collective timeout (ddp_timeout) must be a positive number"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace strata::dist
