// `strata job run | status | logs | stop | interrupt | list`: training jobs described as
// SageMaker's Estimator describes them, run locally, over a hostfile or on Slurm, surviving
// spot interruptions, with time limits and billing (docs/jobs.md).
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "cli/data_paths.h"
#include "cli/job_commands.h"
#include "io/files.h"
#include "jobs/attempt.h"
#include "jobs/job_control.h"
#include "jobs/job_progress.h"
#include "jobs/launcher.h"
#include "jobs/local_runner.h"
#include "jobs/process.h"
#include "jobs/script_entry.h"
#include "jobs/slurm.h"
#include "jobs/slurm_runner.h"
#include "kernels/device.h"
#include "models/memory_estimate.h"
#include "models/registry.h"
#include "util/error.h"

namespace strata::cli {

namespace {

namespace fs = std::filesystem;
using namespace strata::jobs;

double mib(size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

std::string default_job_name(const std::string& base) {
  // SageMaker's: <base_job_name>-YYYY-MM-DD-HH-MM-SS-mmm (UTC)
  std::string t = iso_time(now_seconds());  // 2026-11-23T03:12:54.123Z
  for (char& c : t)
    if (c == 'T' || c == ':' || c == '.') c = '-';
  t.pop_back();
  return base + "-" + t;
}

// `strata info`'s estimate for a strata train job; a script builds a model the plan cannot see.
std::string memory_line(const PlannedJob& pj, const MemoryEstimate* m) {
  if (!m) return "not estimated (the script builds its own model)";
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%.1f MiB per rank (strata info: batch %d x seq %d; parameters %.1f, gradients %.1f, optimizer %.1f, "
                "activations %.1f, scratch %.1f MiB)",
                mib(m->total()), pj.args.per_device_train_batch_size, pj.args.max_seq_length, mib(m->parameters),
                mib(m->gradients), mib(m->optimizer_state), mib(m->activations), mib(m->scratch));
  return buf;
}

// What each rank runs: the training config and the hyperparameters over it, or the script's
// command line.
std::string training_line(const JobPlan& p, const JobSpec& spec) {
  if (p.runs_script()) return shell_join(script_argv(p));
  std::string hp;
  for (const auto& [k, v] : spec.hyperparameters) hp += (hp.empty() ? "" : ", ") + k + "=" + v;
  return spec.training_config_source + (hp.empty() ? "" : " + " + hp);
}

void print_plan(const PlannedJob& pj, const JobSpec& spec, const MemoryEstimate* m) {
  const JobPlan& p = pj.plan;
  const InstanceType& t = p.instance;
  std::printf("job           %s\n", p.name.c_str());
  std::string backend = backend_name(p.backend);
  if (p.backend == Backend::Local) backend += " (this machine, " + std::string(p.world_size() > 1 ? "mpirun" : "one process") + ")";
  if (p.backend == Backend::Hostfile) {
    backend += " (mpirun over " + spec.hostfile + ":";
    for (const auto& h : p.hosts) backend += " " + h;
    backend += ")";
  }
  if (p.backend == Backend::Slurm)
    backend += " (sbatch --nodes=" + std::to_string(p.instance_count) + " --ntasks-per-node=" +
               std::to_string(p.ranks_per_host) + " --cpus-per-task=" + std::to_string(p.threads_per_rank) +
               (p.slurm_partition.empty() ? "" : " --partition=" + p.slurm_partition) + "; srun)";
  std::printf("backend       %s\n", backend.c_str());
  std::printf("instances     %d x %s (cores %d, GPUs %d, memory %.0f GiB)\n", p.instance_count, t.name.c_str(), t.cores,
              t.gpus, t.memory_gib);
  std::printf("ranks         %d: %d per instance, %d thread(s) each\n", p.world_size(), p.ranks_per_host, p.threads_per_rank);
  std::printf("memory        %s\n", memory_line(pj, m).c_str());
  const double price = p.spot ? t.spot_usd_per_hour : t.on_demand_usd_per_hour;
  std::printf("price         %.6g USD/h (%d x %.6g USD/h, %s%s)\n", price * p.instance_count, p.instance_count, price,
              p.spot ? "spot" : "on demand",
              p.spot ? cat("; on demand ", t.on_demand_usd_per_hour * p.instance_count, " USD/h").c_str() : "");
  std::printf("limits        max_run %.0f s%s, grace %.0f s\n", p.max_run,
              p.max_wait > 0 ? cat(", max_wait ", p.max_wait, " s").c_str() : "", p.grace);
  std::printf("checkpoints   ranks write %s; uploaded to %s\n", p.local_dir.c_str(), p.checkpoint_dir.c_str());
  std::printf("%s%s\n", p.runs_script() ? "script        " : "training      ", training_line(p, spec).c_str());
  if (!p.simulate_interruptions.empty()) {
    std::string at;
    for (const SimulatedInterruption& i : p.simulate_interruptions)
      at += (at.empty() ? "" : ", ") + (i.at_step() ? cat("after step ", i.step) : cat(i.seconds, " s in"));
    std::printf("interruptions simulated %s (attempts 1..%zu); capacity returns %g s later\n", at.c_str(),
                p.simulate_interruptions.size(), p.simulate_capacity_wait);
  }
  std::printf("record        %s\n", p.job_dir.c_str());
  for (const auto& n : pj.notes) std::printf("note: %s\n", n.c_str());
  std::fflush(stdout);
}

// A job name must be new, unless --rerun asks to run a finished one again; its old record
// is kept beside it.
void claim_job_name(const JobRecord& rec, const std::string& name, bool rerun) {
  if (!rec.exists()) return;
  const auto cur = rec.current();
  const std::string state = cur ? status_name(*cur) : "unknown";
  if (cur && !is_final(*cur) && job_is_alive(rec))
    fail("job ", name, " is running (", state, "); a job name is unique: strata job status ", name);
  if (!rerun)
    fail("job ", name, " already exists (status ", state, ", created ", rec.status().value("created", "?"),
         "); a job name is unique: choose another --job-name, or pass --rerun to run it again (its record moves aside; "
         "training resumes from the newest checkpoint in checkpoint_uri)");
  const std::string aside = rec.dir() + ".previous-" + std::to_string(static_cast<long long>(now_seconds()));
  fs::rename(rec.dir(), aside);
  std::printf("the previous record of %s moved to %s\n", name.c_str(), aside.c_str());
}

struct RunOptions {
  std::string spec;
  std::optional<std::string> job_name;
  bool rerun = false, dry_run = false;
};

int job_run(const RunOptions& a) {
  PlanInputs in;
  in.spec = load_job_spec(a.spec);
  in.catalog = InstanceCatalog::load(in.spec.instance_catalog.empty() ? default_catalog() : in.spec.instance_catalog);
  in.job_name = a.job_name.value_or(default_job_name(in.spec.base_job_name));
  check_job_name(in.job_name, a.job_name ? "--job-name" : in.spec.source + " base_job_name");
  in.working_dir = fs::current_path().string();
  in.strata_binary = self_binary();
  in.local_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  in.local_gpus = kernels::cuda_device_count();
  const PlannedJob pj = make_plan(in);
  const JobPlan& p = pj.plan;
  MemoryEstimate m{};
  if (!p.runs_script()) {
    m = memory_per_rank(pj.args);
    if (mib(m.total()) * p.ranks_per_host > p.instance.memory_gib * 1024)
      fail(in.spec.source, ": ", p.ranks_per_host, " rank(s) of ", mib(m.total()), " MiB each do not fit in an ",
           p.instance.name, " instance's ", p.instance.memory_gib, " GiB (batch ", pj.args.per_device_train_batch_size,
           " x seq ", pj.args.max_seq_length, ")");
  }
  const JobRecord rec(p.job_dir);
  if (!a.dry_run) claim_job_name(rec, p.name, a.rerun);
  print_plan(pj, in.spec, p.runs_script() ? nullptr : &m);
  if (a.dry_run) {
    if (p.backend == Backend::Slurm) std::printf("\n%s", slurm_batch_script(p).c_str());
    return 0;
  }
  create_record(p, rec, io::read_file(in.spec.source), pj.training_yaml);
  std::printf("\n");
  const JobStatus end = p.backend == Backend::Slurm ? run_slurm_job(p, rec) : run_local_job(p, rec);
  std::printf("job %s: %s\n", p.name.c_str(), status_name(end));
  if (!is_final(end)) return 130;  // the Slurm follower was interrupted; the job goes on
  return end == JobStatus::Completed ? 0 : 1;
}

int job_slurm_step(const std::string& job_dir) {
  const JobRecord rec(fs::absolute(job_dir).string());
  return run_slurm_step(load_plan(rec), rec);
}

// Under Slurm, the allocation's node names (n[1-2] -> n1, n2), as scontrol expands them.
std::vector<std::string> slurm_hostnames(const std::string& nodelist) {
  const CommandResult r = run_command({"scontrol", "show", "hostnames", nodelist});
  if (r.status != 0) fail("scontrol show hostnames ", nodelist, " failed: ", r.output);
  std::vector<std::string> hosts;
  std::istringstream words(r.output);
  for (std::string h; words >> h;) hosts.push_back(h);
  return hosts;
}

struct ScriptRankOptions {
  std::string job_dir, resume;
};

// One rank of a script entry point: its SM_* variables, then the script in this process.
int job_script_rank(const ScriptRankOptions& o) {
  const JobRecord rec(fs::absolute(o.job_dir).string());
  const JobPlan p = load_plan(rec);
  if (!p.runs_script()) fail("strata job script-rank: job ", p.name, " runs strata train, not a script");
  const RankPlace place = rank_place(p, [](const char* name) { return std::getenv(name); }, slurm_hostnames);
  exec_script(p, script_environment(p, place, o.resume, channels_in_environment()));
}

}  // namespace

MemoryEstimate memory_per_rank(const TrainingArguments& a) {
  const std::unique_ptr<Model<float>> shape_only = make_model<float>(load_model_config(a.model_name_or_path));
  return estimate_training_memory(*shape_only, a.per_device_train_batch_size, a.max_seq_length);
}

std::string self_binary() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("strata") : p.string();
}

Run define_job(CLI::App& cmd) {
  cmd.require_subcommand(1);
  std::map<const CLI::App*, Run> runs;
  CLI::App* run = cmd.add_subcommand("run", "validate JOB.yaml, print the plan, run the job to the end");
  auto r = std::make_shared<RunOptions>();
  run->add_option("spec", r->spec, "the job spec (docs/jobs.md)")->required()->type_name("JOB.yaml");
  run->add_option("--job-name", r->job_name, "the job's name (default: base_job_name-<UTC time>)");
  run->add_flag("--rerun", r->rerun, "run a finished job again (its record moves aside)");
  run->add_flag("--dry-run", r->dry_run, "print the plan (and the Slurm batch script), run nothing");
  runs[run] = [r](const auto&) { return job_run(*r); };
  CLI::App* step = cmd.add_subcommand("slurm-step", "run by the batch script that strata job run submits");
  auto dir = std::make_shared<std::string>();
  step->add_option("job_dir", *dir, "the job's record directory")->required();
  step->group("");  // not for people: hidden from the help
  runs[step] = [dir](const auto&) { return job_slurm_step(*dir); };
  CLI::App* script = cmd.add_subcommand("script-rank", "run by each rank of a job whose entry_point is a script");
  auto sr = std::make_shared<ScriptRankOptions>();
  script->add_option("job_dir", sr->job_dir, "the job's record directory")->required();
  script->add_option("--resume", sr->resume, "the checkpoint to resume from (STRATA_RESUME_FROM_CHECKPOINT)");
  script->group("");
  runs[script] = [sr](const auto&) { return job_script_rank(*sr); };
  define_job_inspection(cmd, runs);
  for (CLI::App* sub : cmd.get_subcommands({})) sub->allow_extras();
  return [runs, &cmd](const std::vector<std::string>& trailing) { return runs.at(cmd.get_subcommands().front())(trailing); };
}

}  // namespace strata::cli
