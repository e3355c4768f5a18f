// `strata study STUDY.yaml`: runs the cells of a scaling and cost study, each as a training
// job (`strata job run`, a child process: one cell's failure is recorded, not the study's
// end), and keeps the table in the study directory (docs/studies.md). Run it again to resume:
// completed jobs are kept, failed ones run again.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/data_paths.h"
#include "cli/job_commands.h"
#include "io/files.h"
#include "io/temp_dir.h"
#include "jobs/instance_catalog.h"
#include "jobs/job_record.h"
#include "jobs/job_spec.h"
#include "jobs/launcher.h"
#include "jobs/process.h"
#include "models/config.h"
#include "report/study_report.h"
#include "study/cell_plan.h"
#include "study/study_table.h"
#include "train/unit_profile.h"
#include "util/error.h"
#include "util/signal_flag.h"

namespace strata::cli {

namespace {

namespace fs = std::filesystem;
using namespace strata::study;

struct StudyOptions {
  std::string spec;
  bool dry_run = false;
};

// The study directory is this study's, or new: results of two studies never mix.
void claim_study_dir(const StudySpec& s, const std::string& dir, uint64_t fingerprint, bool dry_run) {
  const std::string marker = dir + "/study.json";
  const std::string fp = cat(std::hex, fingerprint);
  if (fs::exists(marker)) {
    const nlohmann::json j = io::read_json_file(marker);
    if (j.value("fingerprint", "") != fp)
      fail(s.source, ": output_dir ", dir, " belongs to another study ('", j.value("study", "?"), "', fingerprint ",
           j.value("fingerprint", "?"), "; this one is ", fp,
           "): the base job, its training config, the budget or the grid differ. Choose another output_dir, or "
           "remove that directory to start again");
    return;
  }
  if (fs::exists(dir) && !fs::is_empty(dir))
    fail(s.source, ": output_dir ", dir, " exists and is not a study directory (no study.json); choose another");
  if (dry_run) return;
  fs::create_directories(dir);
  io::write_file_atomic(marker, nlohmann::json{{"study", s.name}, {"fingerprint", fp}, {"source", s.source}}.dump(2) + "\n");
}

nlohmann::json write_tables(const StudySpec& spec, const std::vector<CellRuns>& cells, const ProjectionContext& pc,
                            const std::string& dir) {
  nlohmann::json results = study_results(spec, cells, pc);
  io::write_file_atomic(dir + "/results.json", results.dump(2) + "\n");
  io::write_file_atomic(dir + "/results.csv", results_csv(results));
  io::write_file_atomic(dir + "/results.md", results_markdown(results));
  return results;
}

// The child that runs one job of a cell: `strata job run`, inside network-namespace hosts for
// netns cells (scripts/netns_cluster.sh, with the cell's link rate).
std::vector<std::string> job_command(const CellContext& ctx, const CellPlan& c, const std::string& spec_path,
                                     const std::string& name) {
  const std::vector<std::string> run = {ctx.strata_binary, "job", "run", spec_path, "--job-name", name};
  if (c.cluster == "local") return run;
  const std::string prefix = cat("st", getpid() % 100000, "h");
  return {netns_script(), "-n", std::to_string(c.instance_count), "--rate", c.rate.empty() ? "unlimited" : c.rate,
          "--prefix", prefix, "--subnet", ctx.netns_subnet, "--run",
          "cd " + jobs::shell_join({ctx.working_dir}) + " && " + jobs::shell_join(run)};
}

// Runs one job to its end; Ctrl-C stops it (the job runner checkpoints and ends it Stopped)
// and then the study.
int run_job(const std::vector<std::string>& argv, const std::string& log) {
  SignalFlag stop{SIGINT, SIGTERM};
  jobs::Process p = jobs::Process::start(argv, {log, {}, {}});
  bool forwarded = false;
  for (;;) {
    if (const auto st = p.poll()) return stop.count() ? 130 : *st;
    if (stop.count() && !forwarded) {
      p.signal(SIGINT);
      forwarded = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// The unit profiles the projections need (study/projection.h), measured here before the cells
// run (the machine is then the study's alone) and kept in unit_profiles.json, so that a resumed
// study projects from the same measurements.
void measure_profiles(const std::vector<ProfileKey>& keys, const std::string& path, ProjectionContext& pc) {
  nlohmann::json kept = fs::exists(path) ? io::read_json_file(path) : nlohmann::json::object();
  for (const auto& [id, j] : kept.items()) pc.profiles[id] = UnitProfile::from_json(j);
  for (const ProfileKey& k : keys) {
    if (pc.profiles.count(k.id())) continue;
    std::printf("profiling the layer units of %s: batch %d x %d, tensor-parallel rank 0 of %d, %d thread(s)...\n",
                k.model.c_str(), k.B, k.T, k.tp, k.threads);
    std::fflush(stdout);
    const UnitProfile p = profile_units(load_model_config(k.model), k.B, k.T, k.tp, k.threads);
    std::printf("  %.4g s per step of compute (%zu units)\n", p.step_compute_s(), p.units.size());
    pc.profiles[k.id()] = p;
    kept[k.id()] = p.to_json();
    io::write_file_atomic(path, kept.dump(1) + "\n");
  }
}

std::string summary(const RunResult& r) {
  if (!r.completed()) return r.status.empty() ? "did not start (see the log)" : r.status + ": " + r.message;
  std::string s = cat("train ", r.train_runtime, " s, ", r.samples_per_second, " samples/s, cost ", r.cost_usd, " USD");
  if (r.eval.count("eval_f1")) s += cat(", eval_f1 ", r.eval.at("eval_f1"));
  return s;
}

int study_run(const StudyOptions& o) {
  const StudySpec spec = load_study_spec(o.spec);
  const std::string job_text = io::read_file(spec.job_path);
  const jobs::JobSpec base = jobs::parse_job_spec(job_text, spec.job_path);
  const std::string dir = fs::weakly_canonical(fs::absolute(spec.output_dir)).string();
  claim_study_dir(spec, dir, study_fingerprint(spec, job_text, base.training_config_yaml), o.dry_run);

  // A dry run plans the cells (netns cells write their hostfile) in a directory that goes away.
  std::optional<io::TempDir> scratch;
  if (o.dry_run) scratch.emplace("strata_study");
  CellContext ctx;
  ctx.study = &spec;
  ctx.base_job_text = job_text;
  ctx.study_dir = o.dry_run ? scratch->path() : dir;
  ctx.working_dir = fs::current_path().string();
  ctx.strata_binary = self_binary();
  ctx.default_catalog = default_catalog();
  ctx.local_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ctx.netns_subnet = cat("10.232.", getpid() % 200 + 20);  // a /24 of its own: other clusters may be up

  ProjectionContext pc;
  pc.links = load_links(default_links());
  pc.machine_cores = ctx.local_cores;
  if (!spec.projection.instance_counts.empty()) {
    find_link(pc.links, spec.projection.link, spec.source + " projection.link");
    const jobs::InstanceCatalog catalog = jobs::InstanceCatalog::load(default_catalog());
    const std::string where = spec.source + " projection.instance_type";
    const jobs::InstanceType& t = catalog.at(spec.projection.instance_type, where);
    pc.usd_per_instance_hour = t.on_demand_usd_per_hour;
    pc.instance_cores = t.cores;
    if (!t.gpu.empty()) {
      const GpuCatalog gpus = GpuCatalog::load(default_gpus());
      pc.gpu = gpus.at(t.gpu, cat(catalog.source(), ": ", t.name, ".gpu"));
      pc.gpu_achieved = gpus.achieved(*pc.gpu);
      if (!t.link_within.empty()) pc.gpu_link = find_link(pc.links, t.link_within, cat(catalog.source(), ": ", t.name, ".link_within")).name;
    }
  }

  std::vector<CellRuns> cells;
  int runnable = 0;
  for (const CellValues& v : spec.cells) {
    CellRuns c{plan_cell(ctx, v), {}};
    if (c.plan.invalid.empty()) {
      ++runnable;
      std::printf("cell %s: %s\n  %d rank(s) (%d x %s, %d per host, %d thread(s) each), global batch %lld, %lld steps, "
                  "%lld samples, learning_rate %.6g\n",
                  c.plan.id.c_str(), c.plan.label.c_str(), c.plan.world_size, c.plan.instance_count,
                  c.plan.instance_type.c_str(), c.plan.ranks_per_host, c.plan.threads_per_rank,
                  static_cast<long long>(c.plan.global_batch), static_cast<long long>(c.plan.max_steps),
                  static_cast<long long>(c.plan.samples), c.plan.learning_rate);
    } else {
      std::printf("cell %s: %s\n  skipped: %s\n", c.plan.id.c_str(), c.plan.label.c_str(), c.plan.invalid.c_str());
    }
    cells.push_back(std::move(c));
  }
  std::printf("study %s: %zu cell(s), %d to run x %d repeat(s), %zu skipped; results in %s\n", spec.name.c_str(),
              cells.size(), runnable, spec.repeats, cells.size() - runnable, dir.c_str());
  std::vector<ProfileKey> profiles;
  for (const CellRuns& c : cells)
    if (c.plan.invalid.empty()) {
      profiles.push_back(c.plan.micro_profile());
      if (c.plan.world_size == 1) profiles.push_back(c.plan.whole_batch_profile());
    }
  const CellPlan* reference = projection_reference(cells);
  if (reference && !spec.projection.instance_counts.empty()) {
    std::vector<std::string> skipped;
    pc.past = plan_projected_layouts(spec, *reference, skipped);
    for (const std::string& why : skipped) std::printf("projection: skipped %s\n", why.c_str());
    for (const ProjectedLayout& p : pc.past) profiles.push_back(p.profile);
  }
  std::fflush(stdout);
  if (o.dry_run) return 0;
  if (runnable == 0) fail(spec.source, ": no cell of the grid can run (see the reasons above)");
  measure_profiles(profiles, dir + "/unit_profiles.json", pc);

  int done = 0, failed = 0;
  const int total = runnable * spec.repeats;
  for (CellRuns& c : cells) {
    if (!c.plan.invalid.empty()) continue;
    const std::string cell_dir = c.plan.dir(ctx);
    fs::create_directories(cell_dir);
    const std::string spec_path = cell_dir + "/job.yaml";
    io::write_file_atomic(spec_path, c.plan.spec_yaml);
    for (int r = 1; r <= spec.repeats; ++r) {
      const std::string name = c.plan.job_name(r);
      const std::string job_dir = dir + "/jobs/" + name;
      ++done;
      RunResult prior = read_run(job_dir);
      if (prior.completed()) {
        std::printf("[%d/%d] %s: kept (completed before): %s\n", done, total, name.c_str(), summary(prior).c_str());
        c.runs.push_back(prior);
        continue;
      }
      if (fs::exists(job_dir)) {  // failed or cut short: run again from scratch, the old record kept aside
        const std::string aside = cat(job_dir, ".failed-", static_cast<long long>(jobs::now_seconds()));
        fs::rename(job_dir, aside);
        std::printf("[%d/%d] %s: retrying (previous run %s, moved to %s)\n", done, total, name.c_str(),
                    prior.status.empty() ? "unfinished" : prior.status.c_str(), aside.c_str());
      }
      const std::string log = cat(cell_dir, "/run-", r, ".log");
      std::printf("[%d/%d] %s: %s (log %s)\n", done, total, name.c_str(), c.plan.label.c_str(), log.c_str());
      std::fflush(stdout);
      const int status = run_job(job_command(ctx, c.plan, spec_path, name), log);
      RunResult result = read_run(job_dir);
      if (!result.completed() && result.message.empty()) result.message = cat("exit status ", status, "; see ", log);
      std::printf("        %s\n", summary(result).c_str());
      std::fflush(stdout);
      failed += !result.completed();
      c.runs.push_back(result);
      write_tables(spec, cells, pc, dir);
      if (status == 130) {
        std::printf("study stopped; run the same command again to resume\n");
        return 130;
      }
    }
  }
  const nlohmann::json results = write_tables(spec, cells, pc, dir);
  std::printf("study %s: %d of %d run(s) completed; table: %s/results.md (csv, json)\n", spec.name.c_str(),
              total - failed, total, dir.c_str());
  // The report too, so that one command gives the picture; the results stand without it.
  try {
    io::write_file_atomic(dir + "/report.html", report::study_report_html(results));
    std::printf("report: %s/report.html\n", dir.c_str());
  } catch (const Error& e) {
    std::printf("the report was not drawn (%s); strata report %s draws it\n", e.what(), dir.c_str());
  }
  return failed ? 1 : 0;
}

}  // namespace

Run define_study(CLI::App& cmd) {
  auto o = std::make_shared<StudyOptions>();
  cmd.add_option("spec", o->spec, "the study: a base job and a grid of axes (docs/studies.md)")
      ->required()
      ->type_name("STUDY.yaml");
  cmd.add_flag("--dry-run", o->dry_run, "print the cells (and the skipped ones, with why), run nothing");
  return [o](const auto&) { return study_run(*o); };
}

}  // namespace strata::cli
