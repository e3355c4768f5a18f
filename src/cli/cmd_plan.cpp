// `strata plan JOB.yaml`: before a job runs, what each candidate layout would take: memory
// per rank, step time, total time and cost, best (fastest) first. The compute time of a step
// is measured here, by two short calibration runs of the job's training on one process; the
// all-reduce comes from the links' model (catalog/links.yaml, fitted to bench_allreduce).
// docs/studies.md, "strata plan".
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "cli/commands.h"
#include "cli/job_commands.h"
#include "io/files.h"
#include "io/temp_dir.h"
#include "jobs/instance_catalog.h"
#include "jobs/job_plan.h"
#include "jobs/process.h"
#include "study/projection.h"
#include "util/error.h"

namespace strata::cli {

namespace {

namespace fs = std::filesystem;
using namespace strata::study;

struct PlanOptions {
  std::string spec;
  std::string link = "datacenter-25gbit";
  std::vector<int> counts = {1, 2, 4, 8};
  int calibration_steps = 8;
};

struct Calibration {
  double step_s = 0;          // seconds per step, start-up excluded
  int steps = 0;              // the N the step was measured over
  bool upper_bound = false;   // the difference stayed in the jitter: the long run's mean step
  int threads = 1;
  int64_t train_samples = 0;  // the training set's size, as the trainer counted it
};

// The job's training on one process, `steps` steps: its train_runtime and the training set's size.
std::pair<double, int64_t> timed_run(const jobs::JobSpec& one, int steps, int threads, const std::string& dir) {
  const std::string out = cat(dir, "/out-", steps);
  const std::string cfg = jobs::effective_training_config(
      one, {{"output_dir", out}, {"max_steps", std::to_string(steps)}, {"num_threads", std::to_string(threads)},
            {"report_to", "none"}, {"save_strategy", "no"}, {"eval_strategy", "no"}, {"do_eval", "false"},
            {"do_predict", "false"}, {"load_best_model_at_end", "false"}, {"overwrite_output_dir", "true"}});
  const std::string path = cat(dir, "/training-", steps, ".yaml");
  io::write_file_atomic(path, cfg);
  const jobs::CommandResult r = jobs::run_command({self_binary(), "train", path});
  if (r.status != 0) fail("strata plan: the calibration run failed (exit status ", r.status, "):\n", r.output);
  const nlohmann::json res = io::read_json_file(out + "/train_results.json");
  return {res.value("train_runtime", 0.0), res.value("train_samples", int64_t{0})};
}

// Times a step of the job's training on one process: two runs, 2 and 2 + N steps, and the
// difference of their train_runtime over N, so start-up and the first steps' one-off costs
// (first touch of the weights, the data loader filling) cancel out. On a tiny model the
// difference can be lost in the runs' jitter (even negative): then N grows fourfold until the
// longer run stands clear of it, and only after that does the plan fall back on the longer
// run's mean step, first steps included (an upper bound, said so).
Calibration calibrate(const jobs::JobSpec& spec, const PlanOptions& o, int threads) {
  const io::TempDir tmp("strata_plan");
  jobs::JobSpec one = spec;
  one.distribution.clear();  // one process: no processes_per_host to check against
  Calibration c;
  c.threads = threads;
  int n = o.calibration_steps;
  std::printf("calibrating: the job's training on 1 process of %d thread(s), 2 and %d steps...\n", threads, 2 + n);
  std::fflush(stdout);
  const auto [short_s, samples] = timed_run(one, 2, threads, tmp.path());
  c.train_samples = samples;
  for (int attempt = 0;; ++attempt, n *= 4) {
    const double long_s = timed_run(one, 2 + n, threads, tmp.path()).first;
    // 10% of the short run: well above the jitter of a run's wall time, well below a step of
    // any model whose steps outweigh its start-up.
    if (long_s - short_s > 0.1 * short_s) {
      c.step_s = (long_s - short_s) / n;
      c.steps = n;
      return c;
    }
    if (attempt == 2) {
      c.step_s = long_s / (2 + n);
      c.steps = 2 + n;
      c.upper_bound = true;
      return c;
    }
    std::printf("calibrating: 2 and %d steps took %.4g s and %.4g s, within the runs' jitter; again with %d steps...\n",
                2 + n, short_s, long_s, 2 + 4 * n);
    std::fflush(stdout);
  }
}

struct Candidate {
  std::string layout;
  int world = 0, threads = 0;
  double mem_mib = 0;
  bool fits = true;
  StepEstimate step;
  int64_t steps = 0;
  double total_s = 0, cost_usd = 0;
};

std::string hms(double s) {
  char buf[32];
  const long t = std::lround(s);
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  return buf;
}

int plan_run(const PlanOptions& o) {
  const jobs::JobSpec spec = jobs::load_job_spec(o.spec);
  const jobs::InstanceCatalog catalog =
      jobs::InstanceCatalog::load(spec.instance_catalog.empty() ? STRATA_DEFAULT_CATALOG : spec.instance_catalog);
  const std::vector<LinkModel> links = load_links(STRATA_DEFAULT_LINKS);
  const LinkModel& shm = find_link(links, "shm", STRATA_DEFAULT_LINKS);
  const LinkModel& inter = find_link(links, o.link, "--link");
  jobs::PlanInputs in;
  in.spec = spec;
  in.catalog = catalog;
  in.job_name = "plan";
  in.working_dir = fs::current_path().string();
  in.strata_binary = self_binary();
  in.local_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const jobs::PlannedJob pj = jobs::make_plan(in);
  const TrainingArguments& a = pj.args;
  const MemoryEstimate mem = memory_per_rank(a);
  const double mem_mib = static_cast<double>(mem.total()) / (1 << 20);
  const Calibration cal = calibrate(spec, o, in.local_cores);
  const double grad_bytes = static_cast<double>(mem.gradients);

  std::vector<Candidate> all;
  for (const jobs::InstanceType& t : catalog.types()) {
    const int rph = jobs::ranks_per_instance(t, spec.distribution, spec.source);
    const int threads = std::max(1, t.cores / rph);
    for (int n : o.counts) {
      Candidate c;
      c.layout = cat(n, " x ", t.name, " (", rph, " rank(s) of ", threads, " thread(s) each)");
      c.world = n * rph;
      c.threads = threads;
      c.mem_mib = mem_mib;
      c.fits = mem_mib * rph <= t.memory_gib * 1024;
      // Compute scales with the cores a rank has (measured here on cal.threads).
      const double compute = cal.step_s * cal.threads / threads;
      c.step = project_step(compute, grad_bytes, LayoutShape{n, rph, 0, threads}, shm, inter);
      const int64_t global = static_cast<int64_t>(a.per_device_train_batch_size) * a.gradient_accumulation_steps * c.world;
      c.steps = a.max_steps > 0 ? a.max_steps
                                : static_cast<int64_t>(std::ceil(a.num_train_epochs * static_cast<double>(cal.train_samples) /
                                                                 static_cast<double>(global)));
      c.total_s = c.step.step_s() * c.steps;
      const double price = spec.use_spot_instances ? t.spot_usd_per_hour : t.on_demand_usd_per_hour;
      c.cost_usd = c.total_s * n * price / 3600;
      all.push_back(c);
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Candidate& x, const Candidate& y) {
    if (x.fits != y.fits) return x.fits;
    return x.total_s < y.total_s;
  });
  std::printf("job %s: model %s, batch %d x seq %d per rank, %s\n", spec.source.c_str(), a.model_name_or_path.c_str(),
              a.per_device_train_batch_size, a.max_seq_length,
              a.max_steps > 0 ? cat(a.max_steps, " steps").c_str()
                              : cat(a.num_train_epochs, " epoch(s) of ", cal.train_samples, " samples").c_str());
  std::printf("measured: %.4g s per step on 1 process of %d thread(s) (%s %d steps); gradients %.1f MiB per step\n",
              cal.step_s, cal.threads, cal.upper_bound ? "an upper bound: the mean of" : "the difference of 2 and 2 + N, N =",
              cal.steps, grad_bytes / (1 << 20));
  std::printf("links: within a host %s (%.1f us, %.2f GB/s; %s); between hosts %s (%.1f us, %.2f GB/s; %s)\n",
              shm.name.c_str(), shm.latency_s * 1e6, shm.bandwidth_bytes_per_s / 1e9, shm.source.c_str(),
              inter.name.c_str(), inter.latency_s * 1e6, inter.bandwidth_bytes_per_s / 1e9, inter.source.c_str());
  std::printf("assumed: compute per step scales with the cores per rank; the all-reduce is not hidden behind backward "
              "(an upper bound); ranks run on CPUs (no GPU backend yet)\n\n");
  std::printf("%-58s %6s %12s %5s %10s %10s %10s %8s %10s %12s\n", "layout", "ranks", "MiB/rank", "fits", "compute s",
              "comm s", "step s", "steps", "total", "cost USD");
  for (const Candidate& c : all)
    std::printf("%-58s %6d %12.1f %5s %10.4g %10.4g %10.4g %8lld %10s %12.6f\n", c.layout.c_str(), c.world, c.mem_mib,
                c.fits ? "yes" : "no", c.step.compute_s, c.step.comm_s, c.step.step_s(), static_cast<long long>(c.steps),
                hms(c.total_s).c_str(), c.cost_usd);
  return 0;
}

}  // namespace

Run define_plan(CLI::App& cmd) {
  auto o = std::make_shared<PlanOptions>();
  cmd.add_option("spec", o->spec, "the job spec (docs/jobs.md)")->required()->type_name("JOB.yaml");
  cmd.add_option("--link", o->link, "the link between hosts, from catalog/links.yaml")->capture_default_str();
  cmd.add_option("--instance-counts", o->counts, "instance counts to consider")->delimiter(',')->capture_default_str();
  cmd.add_option("--calibration-steps", o->calibration_steps, "steps of the calibration run (3 or more)")
      ->check(CLI::Range(3, 1000))
      ->capture_default_str();
  return [o](const auto&) { return plan_run(*o); };
}

}  // namespace strata::cli
