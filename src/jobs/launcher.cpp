#include "jobs/launcher.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string_view>
#include <thread>

#include "util/error.h"

extern char** environ;  // POSIX: the process environment

namespace strata::jobs {

namespace {

// Hosts named in a hostfile (first word of each non-comment line), to count them.
std::vector<std::string> hostfile_hosts(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("strata launch: cannot read hostfile ", path);
  std::vector<std::string> hosts;
  std::string line;
  while (std::getline(in, line)) {
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    hosts.push_back(line.substr(start, line.find_first_of(" \t", start) - start));
  }
  if (hosts.empty()) fail("strata launch: hostfile ", path, " names no host");
  return hosts;
}

// Variables the ranks need to see as the launching shell sees them.
std::vector<std::string> forwarded_env() {
  std::vector<std::string> names = {"PATH", "LD_LIBRARY_PATH"};
  for (char** e = environ; *e; ++e) {
    const std::string_view kv(*e);
    const std::string name(kv.substr(0, kv.find('=')));
    if (name.starts_with("STRATA_") || name.starts_with("OMPI_MCA_")) names.push_back(name);
  }
  return names;
}

}  // namespace

std::vector<std::string> mpirun_argv(const LaunchSpec& s) {
  if (s.procs_per_host < 1) fail("strata launch: -n must be at least 1");
  if (s.command.empty()) fail("strata launch: no command after --, e.g. strata launch -n 2 -- strata train job.yaml");
  if (!s.hosts.empty() && !s.hostfile.empty()) fail("strata launch: use --hosts or --hostfile, not both");
  const int hosts = !s.hostfile.empty() ? static_cast<int>(hostfile_hosts(s.hostfile).size())
                                        : std::max<int>(1, static_cast<int>(s.hosts.size()));
  const int cores = s.cores_per_host > 0 ? s.cores_per_host : static_cast<int>(std::thread::hardware_concurrency());
  const int threads = std::max(1, cores / s.procs_per_host);
  const bool fits = s.procs_per_host * threads <= cores;

  std::vector<std::string> a = {s.mpirun, "-np", std::to_string(s.procs_per_host * hosts)};
  if (!s.hostfile.empty()) a.insert(a.end(), {"--hostfile", s.hostfile});
  if (!s.hosts.empty()) {
    std::string list;
    for (const auto& h : s.hosts) list += (list.empty() ? "" : ",") + h + ":" + std::to_string(s.procs_per_host);
    a.insert(a.end(), {"--host", list});
  }
  if (fits) {
    // Each rank owns `threads` cores for its OpenMP threads.
    a.insert(a.end(), {"--map-by", "ppr:" + std::to_string(s.procs_per_host) + ":node:PE=" + std::to_string(threads),
                       "--bind-to", "core"});
  } else {
    // More ranks than cores (tests, laptops): no binding, let the OS share the cores.
    a.insert(a.end(), {"--map-by", "ppr:" + std::to_string(s.procs_per_host) + ":node", "--bind-to", "none",
                       "--oversubscribe"});
  }
  if (geteuid() == 0) a.push_back("--allow-run-as-root");
  // Ranks waiting in a collective yield the core instead of spinning on it.
  a.insert(a.end(), {"--mca", "mpi_yield_when_idle", "1"});
  a.insert(a.end(), {"-x", "OMP_NUM_THREADS=" + std::to_string(threads)});
  for (const auto& name : forwarded_env()) a.insert(a.end(), {"-x", name});
  a.insert(a.end(), s.extra_mpirun_args.begin(), s.extra_mpirun_args.end());
  a.insert(a.end(), s.command.begin(), s.command.end());
  return a;
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& arg : argv) {
    if (!out.empty()) out += ' ';
    if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+") == std::string::npos) {
      out += arg;
    } else {
      out += '\'';
      for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
  }
  return out;
}

}  // namespace strata::jobs
