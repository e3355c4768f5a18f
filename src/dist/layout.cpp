// detect_layout(): the launcher's environment variables, checked so that a typo or a
// half-set environment fails at start-up with the variable's name, not as a hang later.
#include <cerrno>
#include <cstdlib>
#include <string>

#include "dist/communicator.h"
#include "util/error.h"

namespace strata::dist {
namespace {

// The four variables one launcher sets, in Layout's field order.
struct Source {
  const char* name;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};

constexpr Source kOpenMpi{"OpenMPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                          "OMPI_COMM_WORLD_LOCAL_SIZE"};
constexpr Source kSlurm{"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"};
constexpr Source kTorchrun{"torchrun env", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"};

bool is_set(const char* var) { return std::getenv(var) != nullptr; }

int parse_int(const char* var, const char* text) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || v < 0 || v > 1'000'000'000)
    fail("environment variable ", var, "='", text, "' is not a non-negative integer");
  return static_cast<int>(v);
}

int read_int(const Source& s, const char* var) {
  const char* text = std::getenv(var);
  if (!text)
    fail("environment variable ", var, " is not set, but ", s.rank, " is: a ", s.name, " launch sets all of ", s.rank,
         ", ", s.size, ", ", s.local_rank, ", ", s.local_size);
  return parse_int(var, text);
}

// srun sets SLURM_NTASKS_PER_NODE only when --ntasks-per-node was given; it always sets
// SLURM_TASKS_PER_NODE ("2(x3),1": 2 tasks on each of the first 3 nodes, then 1) and
// SLURM_NODEID, which together give this node's task count.
int slurm_local_size() {
  if (const char* v = std::getenv("SLURM_NTASKS_PER_NODE")) return parse_int("SLURM_NTASKS_PER_NODE", v);
  const char* spec = std::getenv("SLURM_TASKS_PER_NODE");
  const char* node_text = std::getenv("SLURM_NODEID");
  if (!spec || !node_text)
    fail("environment variables SLURM_NTASKS_PER_NODE and SLURM_TASKS_PER_NODE are not set, but SLURM_PROCID is: "
         "cannot tell how many tasks run on this node");
  const int node = parse_int("SLURM_NODEID", node_text);
  const std::string s = spec;
  int first_node = 0;
  for (size_t pos = 0; pos < s.size();) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(pos, end - pos);
    const size_t paren = item.find("(x");
    int tasks = 0, repeat = 1;
    if (paren == std::string::npos) {
      tasks = parse_int("SLURM_TASKS_PER_NODE", item.c_str());
    } else if (item.back() == ')') {
      tasks = parse_int("SLURM_TASKS_PER_NODE", item.substr(0, paren).c_str());
      repeat = parse_int("SLURM_TASKS_PER_NODE", item.substr(paren + 2, item.size() - paren - 3).c_str());
    } else {
      fail("environment variable SLURM_TASKS_PER_NODE='", s, "' is not of the form 2(x3),1");
    }
    if (node < first_node + repeat) return tasks;
    first_node += repeat;
    pos = end + 1;
  }
  fail("environment variable SLURM_NODEID=", node, " is past the ", first_node, " nodes of SLURM_TASKS_PER_NODE='", s,
       "'");
}

Layout read(const Source& s) {
  Layout l;
  l.source = s.name;
  l.rank = read_int(s, s.rank);
  l.world_size = read_int(s, s.size);
  l.local_rank = read_int(s, s.local_rank);
  const bool slurm_fallback = &s == &kSlurm && !is_set(s.local_size);
  const char* local_size_var = slurm_fallback ? "SLURM_TASKS_PER_NODE" : s.local_size;
  l.local_world_size = &s == &kSlurm ? slurm_local_size() : read_int(s, s.local_size);
  STRATA_CHECK(l.world_size >= 1, "environment variable ", s.size, "=0: a job has at least one process");
  STRATA_CHECK(l.rank < l.world_size, "environment variable ", s.rank, "=", l.rank, " is not below ", s.size, "=",
               l.world_size);
  STRATA_CHECK(l.local_world_size >= 1 && l.local_world_size <= l.world_size, "environment variable ", local_size_var,
               "=", l.local_world_size, " is not between 1 and ", s.size, "=", l.world_size);
  STRATA_CHECK(l.local_rank < l.local_world_size, "environment variable ", s.local_rank, "=", l.local_rank,
               " is not below ", local_size_var, "=", l.local_world_size);
  return l;
}

}  // namespace

std::string Layout::describe() const {
  if (source == "single process") return source;
  return cat("rank ", rank, " of ", world_size, " (local rank ", local_rank, " of ", local_world_size,
             " on this node; ", source, ")");
}

// The launcher's own rank variable selects it: mpirun inside a Slurm allocation sets both
// OMPI_* and SLURM_* and its OMPI_* describe the processes it started, so OpenMPI comes first.
Layout detect_layout() {
  for (const Source* s : {&kOpenMpi, &kSlurm, &kTorchrun})
    if (is_set(s->rank)) return read(*s);
  for (const Source* s : {&kOpenMpi, &kTorchrun})
    if (is_set(s->size)) fail("environment variable ", s->size, " is set but ", s->rank, " is not");
  return Layout{};
}

}  // namespace strata::dist
