// `strata job status | logs | stop | interrupt | list`: a job's record, read or acted on.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/job_commands.h"
#include "io/files.h"
#include "jobs/checkpoint_store.h"
#include "jobs/job_control.h"
#include "jobs/job_progress.h"
#include "jobs/job_spec.h"
#include "jobs/slurm.h"
#include "util/error.h"

namespace strata::cli {

namespace fs = std::filesystem;
using namespace strata::jobs;

namespace {

constexpr const char* kDefaultOutputPath = "out/jobs";

// What every job command takes: the job, and where the jobs are.
struct JobOptions {
  std::string name, output_path = kDefaultOutputPath;
  bool json = false;
  int attempt = 0, rank = -1;
};

JobRecord job_arg(const JobOptions& a) { return find_job(a.name, a.output_path); }

std::string attempt_line(const nlohmann::json& at, double now) {
  const double start = at.at("start");
  if (!at.contains("end")) return cat("attempt ", at.value("attempt", 0), ": running for ", hms(now - start));
  return cat("attempt ", at.value("attempt", 0), ": ", hms(at["end"].get<double>() - start), ", exit status ",
             at.value("exit_status", -1));
}

// What `status --json` adds to status.json, for a client that did not start the job (the
// Python Estimator's attach()): where it is, what it was asked to run, where its model is,
// and whether something still runs it (a job whose runner died never reaches a final status).
void add_job_description(const JobRecord& rec, const JobPlan& p, nlohmann::json& s) {
  const std::string dir = fs::absolute(rec.dir()).lexically_normal().string();
  s["job_dir"] = dir;
  s["working_dir"] = p.working_dir;  // the spec's relative paths are relative to it
  s["checkpoint_uri"] = p.checkpoint_dir;
  s["checkpoint_local_path"] = p.local_dir;
  s["spec"] = yaml_to_json(io::read_file(rec.path("spec.yaml")), rec.path("spec.yaml"));
  if (fs::is_directory(rec.path("model"))) s["model_data"] = dir + "/model";
  const auto cur = rec.current();
  s["running"] = cur && !is_final(*cur) && job_is_alive(rec);
}

int job_status(const JobOptions& a) {
  const JobRecord rec = job_arg(a);
  const JobPlan p = load_plan(rec);
  nlohmann::json s = rec.status();
  const double now = now_seconds();
  const Billing b = job_billing(p, s, s.value("ended", now));
  if (a.json) {
    if (!s.contains("billing")) s["billing_so_far"] = b.to_json();
    add_job_description(rec, p, s);
    std::printf("%s\n", s.dump(2).c_str());
    return 0;
  }
  std::printf("job          %s\n", p.name.c_str());
  std::printf("status       %s%s\n", s.value("status", "?").c_str(),
              s.contains("message") ? (" (" + s["message"].get<std::string>() + ")").c_str() : "");
  std::printf("backend      %s, %d x %s%s\n", backend_name(p.backend), p.instance_count, p.instance.name.c_str(),
              p.spot ? ", spot" : "");
  if (s.contains("slurm_job_id")) {
    const SlurmState ss = slurm_state(s["slurm_job_id"]);
    std::printf("slurm job    %s (%s)\n", s["slurm_job_id"].get<std::string>().c_str(),
                ss.state.empty() ? "no longer known to Slurm" : ss.state.c_str());
  }
  std::printf("created      %s\n", s.value("created", "?").c_str());
  for (const auto& at : s.value("attempts", nlohmann::json::array())) std::printf("  %s\n", attempt_line(at, now).c_str());
  const auto stored = CheckpointStore(p.checkpoint_dir).checkpoints();
  std::printf("checkpoint   %s\n", stored.empty() ? "none yet" : (stored.back() + " (newest in checkpoint_uri)").c_str());
  std::printf("%s%s", s.contains("billing") ? "" : "billing so far:\n", b.report().c_str());
  const auto events = rec.events();
  std::printf("events (last %zu of %zu):\n", std::min<size_t>(10, events.size()), events.size());
  for (size_t i = events.size() > 10 ? events.size() - 10 : 0; i < events.size(); ++i)
    std::printf("  %s  %s\n", events[i].value("time", "").c_str(), events[i].value("event", "").c_str());
  return 0;
}

int job_logs(const JobOptions& a) {
  const JobRecord rec = job_arg(a);
  const int only_attempt = a.attempt, only_rank = a.rank;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(rec.path("logs")))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  int shown = 0;
  for (const fs::path& f : files) {
    const std::string rel = fs::relative(f, rec.dir()).string();
    if (only_attempt > 0 && rel.find("attempt-" + std::to_string(only_attempt) + "/") == std::string::npos) continue;
    if (only_rank >= 0 && f.filename() != "rank-" + std::to_string(only_rank) + ".log") continue;
    std::printf("==> %s <==\n", rel.c_str());
    std::fflush(stdout);
    std::ifstream in(f, std::ios::binary);
    std::cout << in.rdbuf();
    std::cout.flush();
    ++shown;
  }
  if (shown == 0) fail("strata job logs: no log matches (logs are in ", rec.path("logs"), ")");
  return 0;
}

int job_stop(const JobOptions& a) {
  std::printf("%s\n", stop_job(job_arg(a)).c_str());
  return 0;
}

int job_interrupt(const JobOptions& a) {
  std::printf("%s\n", interrupt_job(job_arg(a)).c_str());
  return 0;
}

int job_list(const JobOptions& a) {
  const std::string& out = a.output_path;
  const double now = now_seconds();
  std::printf("%-40s %-20s %-9s %-16s %-24s %9s %12s\n", "NAME", "STATUS", "BACKEND", "INSTANCES", "CREATED", "BILLABLE_S",
              "COST_USD");
  for (const std::string& dir : list_job_dirs(out)) {
    const JobRecord rec(dir);
    const JobPlan p = load_plan(rec);
    const nlohmann::json s = rec.status();
    const Billing b = job_billing(p, s, s.value("ended", now));
    std::printf("%-40s %-20s %-9s %-16s %-24s %9.0f %12.6f\n", p.name.c_str(), s.value("status", "?").c_str(),
                backend_name(p.backend), cat(p.instance_count, " x ", p.instance.name).c_str(), s.value("created", "").c_str(),
                b.billable_seconds, b.cost_usd());
  }
  return 0;
}

}  // namespace

void define_job_inspection(CLI::App& job, std::map<const CLI::App*, Run>& runs) {
  struct Command {
    const char* name;
    const char* help;
    int (*run)(const JobOptions&);
  };
  const Command commands[] = {
      {"status", "status, attempts, billing and the latest events of a job", job_status},
      {"logs", "the logs of every rank and attempt of a job", job_logs},
      {"stop", "stop a job after its current step, with a checkpoint (status Stopped)", job_stop},
      {"interrupt", "a spot interruption of a job, now", job_interrupt},
      {"list", "the jobs under the output path", job_list},
  };
  for (const Command& c : commands) {
    CLI::App* sub = job.add_subcommand(c.name, c.help);
    auto o = std::make_shared<JobOptions>();
    if (c.run != job_list)
      sub->add_option("name", o->name, "a job name under --output-path, or a job directory")->required()->type_name("NAME");
    sub->add_option("--output-path", o->output_path, "where the jobs are")->capture_default_str();
    if (c.run == job_status) sub->add_flag("--json", o->json, "the status record as JSON");
    if (c.run == job_logs) {
      sub->add_option("--attempt", o->attempt, "only this attempt (1, 2, ...)");
      sub->add_option("--rank", o->rank, "only this rank's log");
    }
    runs[sub] = [o, run = c.run](const auto&) { return run(*o); };
  }
}

}  // namespace strata::cli
