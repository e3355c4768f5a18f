// `strata plan JOB.yaml`: before a job runs, what each candidate layout (instance type and
// count, data x pipeline x tensor parallel degrees) would take: memory per rank, step time,
// total time and cost, best (fastest) first. A step is measured here, by two short calibration
// runs of the job's training on one process, and its layer units by profiles at each
// micro-batch and tensor-parallel degree (train/unit_profile.h); the collectives come from the
// links' model (catalog/links.yaml, fitted to bench_allreduce); study/projection.h puts them
// together. docs/studies.md, "strata plan".
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <thread>

#include "cli/commands.h"
#include "cli/data_paths.h"
#include "cli/job_commands.h"
#include "io/files.h"
#include "io/temp_dir.h"
#include "jobs/instance_catalog.h"
#include "jobs/job_plan.h"
#include "jobs/process.h"
#include "models/registry.h"
#include "study/cell_plan.h"
#include "study/projection.h"
#include "train/memory_plan.h"
#include "train/unit_profile.h"
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
  int max_degree = 4;    // pipeline and tensor-parallel degrees tried: 1, 2, 4
  int profile_steps = 3;  // timed steps of each unit profile
  int top = 20;
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
  ParallelLayout parallel;
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

// The pipeline and tensor-parallel degrees worth trying on `world` ranks of `ranks_per_host`
// per host: powers of two up to max_degree, the tensor group inside a host, with a data-parallel
// rest (the model's own limits are checked by parallel_layout).
std::vector<std::pair<int, int>> candidate_degrees(int world, int ranks_per_host, int max_degree) {
  std::vector<std::pair<int, int>> out;
  for (int pp = 1; pp <= max_degree; pp *= 2)
    for (int tp = 1; tp <= max_degree && tp <= ranks_per_host; tp *= 2)
      if (ranks_per_host % tp == 0 && world % (pp * tp) == 0) out.push_back({pp, tp});
  return out;
}

// The job's micro-batches, or for a pipeline that has none (1), the fewest that divide the
// batch and keep the bubble (p-1)/(m+p-1) at or below a third: m >= 2(p-1).
int pipeline_microbatches(const TrainingArguments& a, int pp) {
  if (pp == 1 || a.microbatches > 1) return a.microbatches;
  const int B = a.per_device_train_batch_size;
  for (int m = 2 * (pp - 1); m <= B; ++m)
    if (B % m == 0) return m;
  return B;
}

int plan_run(const PlanOptions& o) {
  const jobs::JobSpec spec = jobs::load_job_spec(o.spec);
  const jobs::InstanceCatalog catalog =
      jobs::InstanceCatalog::load(spec.instance_catalog.empty() ? default_catalog() : spec.instance_catalog);
  const std::vector<LinkModel> links = load_links(default_links());
  const LinkModel& shm = find_link(links, "shm", default_links());
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
  const std::string config_path = a.model_name_or_path + "/config.json";
  const ModelConfig cfg = load_model_config(a.model_name_or_path);
  const int B = a.per_device_train_batch_size, T = a.sequence_length();
  const Calibration cal = calibrate(spec, o, in.local_cores);

  // Unit profiles on this machine's cores, one per micro-batch and tensor-parallel degree.
  std::map<std::string, UnitProfile> profiles;
  auto profile = [&](const ParallelLayout& l) -> const UnitProfile& {
    const ProfileKey k = layout_profile(a, l, cal.threads);
    auto it = profiles.find(k.id());
    if (it != profiles.end()) return it->second;
    std::printf("profiling the layer units: batch %d x %d, tensor-parallel rank 0 of %d, %d thread(s)...\n", k.B, k.T,
                k.tp, cal.threads);
    std::fflush(stdout);
    return profiles.emplace(k.id(), profile_units(cfg, k.B, k.T, k.tp, cal.threads, o.profile_steps)).first->second;
  };
  const UnitProfile& whole = profile({});
  const double other = other_seconds(cal.step_s, whole);
  std::map<int, std::unique_ptr<Model<float>>> rank_models;  // by tensor-parallel degree, for the memory plan

  std::vector<Candidate> all;
  int skipped = 0;
  for (const jobs::InstanceType& t : catalog.types()) {
    const int rph = jobs::ranks_per_instance(t, spec.distribution, spec.source);
    const int threads = std::max(1, t.cores / rph);
    for (int n : o.counts)
      for (const auto& [pp, tp] : candidate_degrees(n * rph, rph, o.max_degree)) {
        Candidate c;
        c.world = n * rph;
        c.threads = threads;
        TrainingArguments la = a;
        la.pipeline_parallel_degree = pp;
        la.tensor_parallel_degree = tp;
        la.microbatches = pipeline_microbatches(a, pp);
        try {
          c.parallel = parallel_layout(la, cfg, c.world, config_path);
        } catch (const Error&) {
          ++skipped;  // the model cannot take it (heads, layers or vocabulary)
          continue;
        }
        c.layout = cat(n, " x ", t.name, " (", rph, " rank(s) of ", threads, " thread(s) each)");
        auto& rank_model = rank_models[tp];
        if (!rank_model) {
          ModelConfig split = cfg;
          split.tensor_split = {tp, 0};
          rank_model = make_model<float>(split);  // the flat buffers are reserved, never touched
        }
        c.mem_mib = static_cast<double>(plan_largest_rank(*rank_model, c.parallel.stage_blocks, B, T, c.parallel.dp, la).total()) /
                    (1 << 20);
        c.fits = c.mem_mib * rph <= t.memory_gib * 1024;
        c.step = project_layout(profile(c.parallel), c.parallel, LayoutShape{n, rph, 0, threads},
                                shm, inter, other);
        const int64_t global = static_cast<int64_t>(B) * a.gradient_accumulation_steps * c.parallel.dp;
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
  std::printf("job %s: model %s, batch %d x seq %d per rank, %s\n", spec.source.c_str(), a.model_name_or_path.c_str(), B,
              a.max_seq_length,
              a.max_steps > 0 ? cat(a.max_steps, " steps").c_str()
                              : cat(a.num_train_epochs, " epoch(s) of ", cal.train_samples, " samples").c_str());
  const double units_s = whole.layer_units_s();
  auto both = [](const UnitWork& w) { return w.forward_s + w.backward_s; };
  std::printf("measured: %.4g s per step on 1 process of %d thread(s) (%s %d steps): layer units %.4g s (embeddings "
              "%.3g, %zu blocks of %.3g, head %.3g; forward + backward), AdamW %.4g s, the rest %.4g s\n",
              cal.step_s, cal.threads, cal.upper_bound ? "an upper bound: the mean of" : "the difference of 2 and 2 + N, N =",
              cal.steps, units_s, both(whole.units.front()), whole.units.size() - 2, both(whole.units[1]),
              both(whole.units.back()), whole.step_compute_s() - units_s, other);
  std::printf("links: within a host %s (%.1f us, %.2f GB/s; %s); between hosts %s (%.1f us, %.2f GB/s; %s)\n",
              shm.name.c_str(), shm.latency_s * 1e6, shm.bandwidth_bytes_per_s / 1e9, shm.source.c_str(),
              inter.name.c_str(), inter.latency_s * 1e6, inter.bandwidth_bytes_per_s / 1e9, inter.source.c_str());
  std::printf("assumed: compute scales with the cores per rank; all-reduces are not hidden behind backward (an upper "
              "bound); pipelines without microbatches get the fewest that keep the bubble at or below a third; "
              "ranks run on CPUs (no GPU backend yet)\n\n");
  std::printf("%-50s %6s %10s %10s %5s %9s %9s %9s %9s %8s %10s %12s\n", "layout", "ranks", "dp x pp x tp",
              "MiB/rank", "fits", "compute s", "bubble s", "comm s", "step s", "steps", "total", "cost USD");
  const size_t shown = o.top > 0 ? std::min<size_t>(all.size(), static_cast<size_t>(o.top)) : all.size();
  for (size_t i = 0; i < shown; ++i) {
    const Candidate& c = all[i];
    std::printf("%-50s %6d %10s %10.1f %5s %9.4g %9.4g %9.4g %9.4g %8lld %10s %12.6f\n", c.layout.c_str(), c.world,
                cat(c.parallel.dp, "x", c.parallel.pp, "x", c.parallel.tp).c_str(), c.mem_mib, c.fits ? "yes" : "no",
                c.step.compute_s, c.step.bubble_s, c.step.comm_s, c.step.step_s(), static_cast<long long>(c.steps),
                hms(c.total_s).c_str(), c.cost_usd);
  }
  if (shown < all.size()) std::printf("(%zu more: --top 0 lists them all)\n", all.size() - shown);
  if (skipped) std::printf("(%d layout(s) the model cannot take left out: heads, layers or vocabulary)\n", skipped);
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
  cmd.add_option("--max-degree", o->max_degree, "largest pipeline and tensor-parallel degree tried (powers of 2)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd.add_option("--profile-steps", o->profile_steps, "timed steps of each layer-unit profile")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd.add_option("--top", o->top, "rows to print, best first (0: all)")->check(CLI::NonNegativeNumber)->capture_default_str();
  return [o](const auto&) { return plan_run(*o); };
}

}  // namespace strata::cli
