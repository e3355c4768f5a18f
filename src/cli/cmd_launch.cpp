// `strata launch [-n PROCS_PER_HOST] [--hostfile FILE | --hosts a,b] [--dry-run] -- COMMAND...`
// runs COMMAND as a data-parallel job through mpirun (docs/distributed.md).
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "jobs/launcher.h"
#include "util/error.h"

namespace strata::cli {

namespace {

int run_launch(jobs::LaunchSpec spec, const std::vector<std::string>& mca, bool dry_run) {
  for (size_t i = 0; i + 1 < mca.size(); i += 2) spec.extra_mpirun_args.insert(spec.extra_mpirun_args.end(), {"--mca", mca[i], mca[i + 1]});
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

}  // namespace

Run define_launch(CLI::App& cmd) {
  struct Options {
    jobs::LaunchSpec spec;
    std::vector<std::string> mca;
    bool dry_run = false;
  };
  auto o = std::make_shared<Options>();
  // Everything after the options (or after --) is the command to run, options included:
  // strata launch -n 2 -- strata train job.yaml
  cmd.prefix_command();
  cmd.add_option("-n,--nproc-per-host", o->spec.procs_per_host, "processes per host")->capture_default_str();
  cmd.add_option("--hostfile", o->spec.hostfile, "OpenMPI hostfile (\"node1 slots=8\" per line)");
  cmd.add_option("--hosts", o->spec.hosts, "hosts, comma-separated")->delimiter(',');
  cmd.add_option("--mpirun", o->spec.mpirun, "the mpirun to run")->capture_default_str();
  cmd.add_option("--mca", o->mca, "an MCA parameter for mpirun: --mca KEY VALUE")
      ->expected(2)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("KEY VALUE");
  cmd.add_flag("--dry-run", o->dry_run, "print the mpirun line, run nothing");
  return [o, &cmd](const std::vector<std::string>& trailing) {
    jobs::LaunchSpec spec = o->spec;
    spec.command = cmd.remaining();
    spec.command.insert(spec.command.end(), trailing.begin(), trailing.end());
    return run_launch(spec, o->mca, o->dry_run);
  };
}

}  // namespace strata::cli
