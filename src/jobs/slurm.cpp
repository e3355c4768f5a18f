#include "jobs/slurm.h"

#include <algorithm>
#include <cmath>

#include "jobs/launcher.h"
#include "jobs/process.h"
#include "util/error.h"

namespace strata::jobs {

namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string run_or_fail(const std::vector<std::string>& argv) {
  const CommandResult r = run_command(argv);
  if (r.status != 0) fail(shell_join(argv), " failed (exit status ", r.status, "): ", trimmed(r.output));
  return r.output;
}

}  // namespace

std::string slurm_minutes(double seconds) { return std::to_string(static_cast<long long>(std::ceil(seconds / 60.0))); }

std::string slurm_batch_script(const JobPlan& p) {
  std::string s = "#!/bin/bash\n";
  auto opt = [&](const std::string& o) { s += "#SBATCH " + o + "\n"; };
  opt("--job-name=" + p.name);
  opt("--nodes=" + std::to_string(p.instance_count));
  opt("--ntasks-per-node=" + std::to_string(p.ranks_per_host));
  opt("--cpus-per-task=" + std::to_string(p.threads_per_rank));
  // The instance type's GPUs on every node (one rank per GPU): Slurm sets CUDA_VISIBLE_DEVICES,
  // and refuses at submission a cluster whose nodes have fewer.
  if (p.instance.gpus > 0) opt("--gpus-per-node=" + std::to_string(p.instance.gpus));
  opt("--time=" + slurm_minutes(p.max_run + p.grace));
  opt("--requeue");
  opt("--signal=B:TERM@" + std::to_string(static_cast<long long>(std::ceil(p.grace))));
  opt("--open-mode=append");
  opt("--output=" + p.job_dir + "/logs/slurm-%j.out");
  opt("--chdir=" + p.working_dir);
  if (!p.slurm_partition.empty()) opt("--partition=" + p.slurm_partition);
  s += "# Written by `strata job run` (docs/jobs.md). The batch step downloads the newest checkpoint,\n"
       "# runs the ranks with srun, uploads checkpoints, and records the attempt in the job directory.\n";
  s += "exec " + shell_join({p.strata_binary, "job", "slurm-step", p.job_dir}) + "\n";
  return s;
}

std::string slurm_submit(const std::string& script_path) {
  // A job no node of the cluster can hold (more GPUs or CPUs per node than any has, more nodes
  // than the partition) would wait in the queue for ever (reason PartitionConfig): Slurm's own
  // dry run refuses it first.
  const CommandResult dry = run_command({"sbatch", "--test-only", script_path});
  if (dry.status != 0)
    fail("Slurm cannot run this job on its cluster (sbatch --test-only ", script_path, "): ", trimmed(dry.output),
         ". Ask for an instance_type whose cores and GPUs a node has, and at most as many instances as nodes "
         "(sinfo -N -o '%N %c %G' lists them)");
  const std::string out = trimmed(run_or_fail({"sbatch", "--parsable", script_path}));
  const std::string id = out.substr(0, out.find(';'));  // "id;cluster" on federated clusters
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
    fail("sbatch ", script_path, ": expected a job id, got '", out, "'");
  return id;
}

bool SlurmState::finished() const {
  return state.empty() || !(state == "PENDING" || state == "RUNNING" || state == "CONFIGURING" ||
                            state == "COMPLETING" || state == "REQUEUED" || state == "REQUEUE_FED" ||
                            state == "REQUEUE_HOLD" || state == "RESIZING" || state == "SUSPENDED" ||
                            state == "STAGE_OUT" || state == "SIGNALING" || state == "STOPPED");
}

SlurmState slurm_state(const std::string& id) {
  // squeue knows the jobs slurmctld still holds (finished ones for MinJobAge seconds); sacct
  // the older ones where the cluster runs accounting (slurmdbd).
  CommandResult r = run_command({"squeue", "-h", "-t", "all", "-j", id, "-o", "%T|%r"});
  std::string out = trimmed(r.output);
  if (r.status != 0 || out.empty()) {
    r = run_command({"sacct", "-n", "-P", "-X", "-j", id, "-o", "State"});
    out = r.status == 0 ? trimmed(r.output) : "";
    out = out.substr(0, out.find('\n'));
    out = out.substr(0, out.find(' '));  // "CANCELLED by 0"
  }
  SlurmState st;
  st.state = out.substr(0, out.find('|'));
  if (out.find('|') != std::string::npos) st.reason = out.substr(out.find('|') + 1);
  return st;
}

void slurm_requeue(const std::string& id) { run_or_fail({"scontrol", "requeue", id}); }

void slurm_set_begin(const std::string& id, double seconds) {
  run_or_fail({"scontrol", "update", "JobId=" + id,
               "StartTime=now+" + std::to_string(static_cast<long long>(std::ceil(std::max(0.0, seconds))))});
}

void slurm_cancel(const std::string& id) { run_or_fail({"scancel", id}); }

void slurm_set_time_limit(const std::string& id, double seconds) {
  run_or_fail({"scontrol", "update", "JobId=" + id, "TimeLimit=" + slurm_minutes(seconds)});
}

}  // namespace strata::jobs
