// `strata launch [-n PROCS_PER_HOST] [--hostfile FILE | --hosts a,b] [--dry-run] -- COMMAND...`
// runs COMMAND as a data-parallel job through mpirun (docs/distributed.md).
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "jobs/launcher.h"
#include "util/error.h"

namespace strata::cli {

int cmd_launch(int argc, char** argv) {
  jobs::LaunchSpec spec;
  bool dry_run = false;
  int i = 0;
  auto value = [&](const char* opt) -> std::string {
    if (i + 1 >= argc) fail("strata launch: ", opt, " needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-n" || a == "--nproc-per-host") {
      const std::string v = value("-n");
      char* end = nullptr;
      spec.procs_per_host = static_cast<int>(std::strtol(v.c_str(), &end, 10));
      if (v.empty() || *end) fail("strata launch: -n expects a number of processes per host, got '", v, "'");
    } else if (a == "--hostfile") {
      spec.hostfile = value("--hostfile");
    } else if (a == "--hosts") {
      const std::string v = value("--hosts");
      for (size_t s = 0; s <= v.size();) {
        const size_t c = std::min(v.find(',', s), v.size());
        if (c > s) spec.hosts.push_back(v.substr(s, c - s));
        s = c + 1;
      }
    } else if (a == "--mpirun") {
      spec.mpirun = value("--mpirun");
    } else if (a == "--mca") {
      spec.extra_mpirun_args.insert(spec.extra_mpirun_args.end(), {"--mca", value("--mca"), value("--mca")});
    } else if (a == "--dry-run") {
      dry_run = true;
    } else {
      fail("strata launch: unknown option ", a, " (valid: -n N, --hostfile FILE, --hosts a,b, --mpirun PATH, ",
           "--mca KEY VALUE, --dry-run, then -- COMMAND)");
    }
  }
  for (; i < argc; ++i) spec.command.push_back(argv[i]);
  const std::vector<std::string> cmd = jobs::mpirun_argv(spec);
  std::printf("%s\n", jobs::shell_join(cmd).c_str());
  std::fflush(stdout);
  if (dry_run) return 0;
  std::vector<char*> c_argv;
  for (const auto& s : cmd) c_argv.push_back(const_cast<char*>(s.c_str()));
  c_argv.push_back(nullptr);
  execvp(c_argv[0], c_argv.data());
  fail("strata launch: cannot run ", cmd[0], ": ", std::strerror(errno), " (install openmpi-bin)");
}

}  // namespace strata::cli
