// `strata plan JOB.yaml`: before a job runs, what each candidate layout (instance type and
// count, data x pipeline x tensor parallel degrees) would take: memory per rank, step time,
// total time and cost, best (fastest) first. A step is measured here, by two short calibration
// runs of the job's training on one process, and its layer units by profiles at each
// micro-batch and tensor-parallel degree (train/unit_profile.h); the collectives come from the
// links' model (catalog/links.yaml, fitted to bench_allreduce or stated per instance type);
// study/projection.h puts them together. A GPU type's ranks compute as study/gpu_rank.h says,
// at the fractions measured on this machine's GPU where it has one. docs/studies.md, "strata plan".
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <numeric>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/data_paths.h"
#include "cli/job_commands.h"
#include "io/files.h"
#include "io/temp_dir.h"
#include "jobs/instance_catalog.h"
#include "jobs/job_plan.h"
#include "jobs/process.h"
#include "kernels/device.h"
#include "models/registry.h"
#include "study/cell_plan.h"
#include "study/gpu_rank.h"
#include "study/projection.h"
#include "train/memory_plan.h"
#include "train/mixed_precision.h"
#include "train/unit_profile.h"
#include "util/error.h"

namespace strata::cli {

namespace {

namespace fs = std::filesystem;
using namespace strata::study;

struct PlanOptions {
  std::string spec;
  std::string link;  // between hosts, for every type; "" each type's own (link_between), else kDefaultLink
  std::vector<std::string> types;  // instance types to consider; empty: the whole catalog
  std::vector<int> counts = {1, 2, 4, 8};
  int calibration_steps = 8;
  int max_degree = 4;    // pipeline and tensor-parallel degrees tried: 1, 2, 4
  int profile_steps = 3;  // timed steps of each unit profile
  int top = 20;
  double startup_s = -1;  // a job's fixed cost inside its training time; < 0: the calibration's
  int64_t samples = 0;    // the training budget in samples (steps follow the global batch); 0: the job's
};

constexpr const char* kDefaultLink = "datacenter-25gbit";

struct Calibration {
  double step_s = 0;          // seconds per step, start-up excluded
  int steps = 0;              // the N the step was measured over
  bool upper_bound = false;   // the difference stayed in the jitter: the long run's mean step
  double startup_s = 0;       // what 2 steps' train_runtime has beyond 2 steps (0 for an upper bound)
  int threads = 1;
  int64_t train_samples = 0;  // the training set's size, as the trainer counted it
};

// The job's training on one process, `steps` steps: its train_runtime and the training set's size.
// `here`: the settings that make it run on this machine's CPU (calibrate()).
std::pair<double, int64_t> timed_run(const jobs::JobSpec& one, int steps, int threads, const std::string& dir,
                                     const jobs::NameValues& here) {
  const std::string out = cat(dir, "/out-", steps);
  jobs::NameValues settings = {
      {"output_dir", out},         {"max_steps", std::to_string(steps)}, {"num_threads", std::to_string(threads)},
      {"report_to", "none"},       {"save_strategy", "no"},              {"eval_strategy", "no"},
      {"do_eval", "false"},        {"do_predict", "false"},              {"load_best_model_at_end", "false"},
      {"overwrite_output_dir", "true"}};
  settings.insert(settings.end(), here.begin(), here.end());
  const std::string cfg = jobs::effective_training_config(one, settings);
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
Calibration calibrate(const jobs::JobSpec& spec, const PlanOptions& o, int threads,
                      const jobs::NameValues& here) {
  const io::TempDir tmp("strata_plan");
  jobs::JobSpec one = spec;
  one.distribution.clear();  // one process: no processes_per_host to check against
  Calibration c;
  c.threads = threads;
  int n = o.calibration_steps;
  std::printf("calibrating: the job's training on 1 process of %d thread(s), 2 and %d steps...\n", threads, 2 + n);
  std::fflush(stdout);
  const auto [short_s, samples] = timed_run(one, 2, threads, tmp.path(), here);
  c.train_samples = samples;
  for (int attempt = 0;; ++attempt, n *= 4) {
    const double long_s = timed_run(one, 2 + n, threads, tmp.path(), here).first;
    // 10% of the short run: well above the jitter of a run's wall time, well below a step of
    // any model whose steps outweigh its start-up.
    if (long_s - short_s > 0.1 * short_s) {
      c.step_s = (long_s - short_s) / n;
      c.steps = n;
      c.startup_s = std::max(0.0, short_s - 2 * c.step_s);
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
  double mfu = 0;  // GPU ranks: the model's FLOPs per step over the GPUs' peak in that time
  int64_t global = 0;  // samples per step
  double efficiency = 0;  // samples per second and rank over the type's smallest data-parallel row's
  const jobs::InstanceType* type = nullptr;
};

// Scaling efficiency, as the seeds define it: each row's samples per second and rank over
// those of its type's row with the fewest ranks among the data-parallel ones (start-up included).
void set_efficiency(std::vector<Candidate>& all) {
  std::map<const jobs::InstanceType*, const Candidate*> reference;
  for (const Candidate& c : all) {
    if (c.parallel.pp != 1 || c.parallel.tp != 1) continue;
    const Candidate*& r = reference[c.type];
    if (!r || c.world < r->world) r = &c;
  }
  auto per_rank = [](const Candidate& c) { return static_cast<double>(c.steps * c.global) / c.total_s / c.world; };
  for (Candidate& c : all) {
    const auto it = reference.find(c.type);
    if (it != reference.end()) c.efficiency = per_rank(c) / per_rank(*it->second);
  }
}

// A fraction as a percentage to 3 digits ("38.2", "0.0412").
std::string percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", f * 100);
  return buf;
}

// H:MM:SS, or seconds to 3 digits under 10 s (a GPU plan of a small job).
std::string hms(double s) {
  char buf[32];
  if (s < 10) {
    std::snprintf(buf, sizeof buf, "%.3gs", s);
    return buf;
  }
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

// What this machine's CPU runs of the job: its mixed precision where this CPU has it, else fp32
// (a job for GPUs may ask for fp16 or tf32, which no CPU path runs): the calibration's settings
// and the precision of the CPU profiles, with a note saying what was changed.
struct OnThisCpu {
  MixedPrecision precision;
  jobs::NameValues settings = {{"use_cpu", "true"}, {"tf32", "false"}};
  std::string note;
};

OnThisCpu on_this_cpu(const TrainingArguments& a) {
  OnThisCpu h;
  try {
    h.precision = mixed_precision(a);
  } catch (const Error& e) {
    h.settings.insert(h.settings.end(), {{"bf16", "false"}, {"fp16", "false"}, {"bf16_full_eval", "false"},
                                         {"fp16_full_eval", "false"}});
    h.note = cat("this CPU cannot run the job's products (", e.what(), "): its CPU figures are fp32 steps");
  }
  return h;
}

// The fraction of its peak this machine's GPU reaches on the job's whole batch, where it has a
// GPU of the catalog: the job's units profiled on it (nullopt without one, or with use_cpu).
std::optional<Achieved> measure_this_gpu(const GpuCatalog& gpus, const TrainingArguments& a, const ModelConfig& cfg,
                                         const Model<float>& model, const PlanOptions& o) {
  if (a.use_cpu || kernels::cuda_device_count() == 0) return std::nullopt;
  const std::string name = kernels::device_properties(kernels::Device::cuda(0)).name;
  const GpuModel* g = gpus.matching(name);
  if (!g) {
    std::printf("this machine's GPU (%s) is not in the GPU catalog: GPU types use their figures there\n", name.c_str());
    return std::nullopt;
  }
  const std::string precision = gpu_product_precision(a);
  const double peak = gpu_peak_flops(*g, precision, "this machine's GPU");
  const int B = a.per_device_train_batch_size, T = a.sequence_length();
  std::printf("profiling the layer units on this machine's GPU (%s): batch %d x %d, %s products...\n", name.c_str(), B, T,
              precision.c_str());
  std::fflush(stdout);
  kernels::use_device(kernels::Device::cuda(0));
  kernels::set_tf32(a.tf32);
  UnitProfile measured;
  {
    const MixedPrecision m = requested_precision(a);
    const MatmulPrecisionScope scope(m.train, m.path);
    measured = profile_units(cfg, B, T, 1, 1, o.profile_steps);
  }
  kernels::use_device(kernels::Device::cpu());
  Achieved here;
  here.products[precision] = achieved_fraction(measured, unit_flops(model, B, T), peak);
  here.memory = adam_memory_fraction(measured, g->memory_bytes_per_s);
  here.launch_s = gpus.achieved(*g).launch_s;
  here.source = cat("measured here on ", name, " (", g->name, "), the job's units at batch ", B, " x ", T);
  std::printf("measured on this GPU: %s products at %.3g of %s's %.4g TFLOP/s, AdamW at %.3g of its %.4g GB/s; "
              "every GPU type below uses these fractions\n",
              precision.c_str(), here.products[precision], g->name.c_str(), peak / 1e12, here.memory,
              g->memory_bytes_per_s / 1e9);
  return here;
}

// How one instance type's ranks run: on CPU cores, or each on a GPU of the catalog.
struct TypeModel {
  const jobs::InstanceType* type = nullptr;
  int ranks_per_host = 1, threads = 1;
  const LinkModel* within = nullptr;
  const LinkModel* between = nullptr;
  std::optional<GpuRanks> gpu;  // none: CPU ranks
};

std::string describe(const TypeModel& m) {
  std::string s = cat(m.type->name, ": ");
  if (m.gpu)
    s += cat(m.ranks_per_host, " rank(s), each on ", m.gpu->describe());
  else
    s += cat(m.ranks_per_host, " CPU rank(s) of ", m.threads, " thread(s)");
  auto link = [](const LinkModel& l) { return cat(l.name, " (", l.bandwidth_bytes_per_s / 1e9, " GB/s)"); };
  return s + "; links " + link(*m.within) + " within, " + link(*m.between) + " between";
}

int plan_run(const PlanOptions& o) {
  const jobs::JobSpec spec = jobs::load_job_spec(o.spec);
  const jobs::InstanceCatalog catalog =
      jobs::InstanceCatalog::load(spec.instance_catalog.empty() ? default_catalog() : spec.instance_catalog);
  const GpuCatalog gpus = GpuCatalog::load(default_gpus());
  const std::vector<LinkModel> links = load_links(default_links());
  const LinkModel& shm = find_link(links, "shm", default_links());
  const LinkModel* forced_between = o.link.empty() ? nullptr : &find_link(links, o.link, "--link");
  std::vector<const jobs::InstanceType*> types;
  for (const std::string& name : o.types) types.push_back(&catalog.at(name, "--instance-types"));
  if (o.types.empty())
    for (const jobs::InstanceType& t : catalog.types()) types.push_back(&t);
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
  const std::string precision = gpu_product_precision(a);

  // Each type's ranks, links and (for a GPU type) its rates, checked before any work.
  std::vector<TypeModel> models;
  std::vector<std::string> left_out;
  for (const jobs::InstanceType* t : types) {
    TypeModel m;
    m.type = t;
    m.ranks_per_host = jobs::ranks_per_instance(*t, spec.distribution, spec.source);
    m.threads = std::max(1, t->cores / m.ranks_per_host);
    const std::string where = cat(catalog.source(), ": ", t->name);
    m.within = t->link_within.empty() ? &shm : &find_link(links, t->link_within, where + ".link_within");
    m.between = forced_between               ? forced_between
                : t->link_between.empty()    ? &find_link(links, kDefaultLink, default_links())
                                             : &find_link(links, t->link_between, where + ".link_between");
    if (!t->gpu.empty()) {
      GpuRanks g;
      g.gpu = gpus.at(t->gpu, where + ".gpu");
      g.precision = precision;
      try {
        g.peak = gpu_peak_flops(g.gpu, precision, t->name);
      } catch (const Error& e) {
        left_out.push_back(e.what());
        continue;
      }
      m.gpu = g;
    }
    models.push_back(m);
  }

  const OnThisCpu here = on_this_cpu(a);
  const Calibration cal = calibrate(spec, o, in.local_cores, here.settings);
  std::map<int, std::unique_ptr<Model<float>>> rank_models;  // by tensor-parallel degree: memory plans and FLOPs
  auto rank_model = [&](int tp) -> const Model<float>& {
    auto& m = rank_models[tp];
    if (!m) {
      ModelConfig split = cfg;
      split.tensor_split = {tp, 0};
      m = make_model<float>(split);  // the flat buffers are reserved, never touched
    }
    return *m;
  };
  const std::optional<Achieved> measured_gpu = measure_this_gpu(gpus, a, cfg, rank_model(1), o);
  for (TypeModel& m : models)
    if (m.gpu) m.gpu->achieved = measured_gpu ? *measured_gpu : gpus.achieved(m.gpu->gpu);

  // Unit profiles on this machine's cores, one per micro-batch and tensor-parallel degree.
  const MatmulPrecisionScope cpu_precision(here.precision.train, here.precision.path);
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
  const double startup_s = o.startup_s >= 0 ? o.startup_s : cal.startup_s;
  const std::vector<double> batch_flops = unit_flops(rank_model(1), B, T);
  const double step_flops = std::accumulate(batch_flops.begin(), batch_flops.end(), 0.0) * a.gradient_accumulation_steps;

  std::vector<Candidate> all;
  int skipped = 0;
  for (const TypeModel& m : models) {
    const jobs::InstanceType& t = *m.type;
    const int rph = m.ranks_per_host;
    for (int n : o.counts)
      for (const auto& [pp, tp] : candidate_degrees(n * rph, rph, o.max_degree)) {
        Candidate c;
        c.world = n * rph;
        c.threads = m.threads;
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
        c.layout = m.gpu ? cat(n, " x ", t.name, " (", rph, " GPU rank(s))")
                         : cat(n, " x ", t.name, " (", rph, " rank(s) of ", m.threads, " thread(s) each)");
        c.mem_mib =
            static_cast<double>(plan_largest_rank(rank_model(tp), c.parallel.stage_blocks, B, T, c.parallel.dp, la, m.gpu.has_value()).total()) /
            (1 << 20);
        c.fits = m.gpu ? c.mem_mib <= m.gpu->gpu.memory_gib * 1024 : c.mem_mib * rph <= t.memory_gib * 1024;
        const UnitProfile& micro = profile(c.parallel);
        if (m.gpu) {
          // Host work (data, the trainer) stays on the rank's share of the host's cores.
          c.step = project_layout(gpu_rank_profile(micro, unit_flops(rank_model(tp), micro.B, T), *m.gpu), c.parallel,
                                  LayoutShape{n, rph, 0, 1},
                                  *m.within, *m.between, other * cal.threads / m.threads);
          c.mfu = step_flops * c.parallel.dp / (c.step.step_s() * c.world * m.gpu->peak);
        } else {
          c.step = project_layout(micro, c.parallel, LayoutShape{n, rph, 0, m.threads}, *m.within, *m.between, other);
        }
        c.type = &t;
        c.global = static_cast<int64_t>(B) * a.gradient_accumulation_steps * c.parallel.dp;
        const double global = static_cast<double>(c.global);
        c.steps = o.samples > 0      ? static_cast<int64_t>(std::ceil(static_cast<double>(o.samples) / global))
                  : a.max_steps > 0 ? a.max_steps
                                    : static_cast<int64_t>(std::ceil(a.num_train_epochs * static_cast<double>(cal.train_samples) / global));
        c.total_s = startup_s + c.step.step_s() * c.steps;
        const double price = spec.use_spot_instances ? t.spot_usd_per_hour : t.on_demand_usd_per_hour;
        c.cost_usd = c.total_s * n * price / 3600;
        all.push_back(c);
      }
  }
  set_efficiency(all);
  std::stable_sort(all.begin(), all.end(), [](const Candidate& x, const Candidate& y) {
    if (x.fits != y.fits) return x.fits;
    return x.total_s < y.total_s;
  });
  std::printf("job %s: model %s, batch %d x seq %d per rank, %s\n", spec.source.c_str(), a.model_name_or_path.c_str(), B,
              a.max_seq_length,
              o.samples > 0       ? cat(o.samples, " samples (--samples), steps as the global batch allows").c_str()
              : a.max_steps > 0 ? cat(a.max_steps, " steps").c_str()
                                : cat(a.num_train_epochs, " epoch(s) of ", cal.train_samples, " samples").c_str());
  if (!here.note.empty()) std::printf("note: %s\n", here.note.c_str());
  const double units_s = whole.layer_units_s();
  auto both = [](const UnitWork& w) { return w.forward_s + w.backward_s; };
  std::printf("measured: %.4g s per step on 1 process of %d thread(s) (%s %d steps): layer units %.4g s (embeddings "
              "%.3g, %zu blocks of %.3g, head %.3g; forward + backward), AdamW %.4g s, the rest %.4g s\n",
              cal.step_s, cal.threads, cal.upper_bound ? "an upper bound: the mean of" : "the difference of 2 and 2 + N, N =",
              cal.steps, units_s, both(whole.units.front()), whole.units.size() - 2, both(whole.units[1]),
              both(whole.units.back()), whole.step_compute_s() - units_s, other);
  std::printf("start-up: %.4g s a job (%s), added to each total\n", startup_s,
              o.startup_s >= 0 ? "--startup-seconds" : "the 2-step run's training time beyond its 2 steps");
  std::printf("model: %.4g GFLOP per step and rank (forward + backward of the units: 6 per weight and token, attention "
              "12 T per token and width)\n", step_flops / 1e9);
  for (const TypeModel& m : models) std::printf("  %s\n", describe(m).c_str());
  for (const std::string& why : left_out) std::printf("  left out: %s\n", why.c_str());
  std::vector<std::string> sources;  // of the GPU fractions used
  for (const TypeModel& m : models)
    if (m.gpu && std::find(sources.begin(), sources.end(), m.gpu->achieved.source) == sources.end())
      sources.push_back(m.gpu->achieved.source);
  for (const std::string& src : sources) std::printf("GPU fractions: %s\n", src.c_str());
  std::printf("assumed: CPU ranks' compute scales with the cores per rank; GPU ranks compute as their units' FLOPs at the "
              "fraction of the GPU's peak above (a unit never faster than its op calls' launches), the rest of a step (data, the trainer) "
              "on their share of the host's cores; all-reduces are not hidden behind backward (an upper bound); "
              "pipelines without microbatches get the fewest that keep the bubble at or below a third\n\n");
  std::printf("%-50s %6s %10s %10s %5s %9s %9s %9s %9s %6s %8s %10s %5s %12s\n", "layout", "ranks", "dp x pp x tp",
              "MiB/rank", "fits", "compute s", "bubble s", "comm s", "step s", "MFU", "steps", "total", "eff",
              "cost USD");
  const size_t shown = o.top > 0 ? std::min<size_t>(all.size(), static_cast<size_t>(o.top)) : all.size();
  for (size_t i = 0; i < shown; ++i) {
    const Candidate& c = all[i];
    std::printf("%-50s %6d %10s %10.1f %5s %9.4g %9.4g %9.4g %9.4g %6s %8lld %10s %5.2f %12.6f\n", c.layout.c_str(),
                c.world, cat(c.parallel.dp, "x", c.parallel.pp, "x", c.parallel.tp).c_str(), c.mem_mib,
                c.fits ? "yes" : "no", c.step.compute_s, c.step.bubble_s, c.step.comm_s, c.step.step_s(),
                c.mfu > 0 ? percent(c.mfu).c_str() : "-", static_cast<long long>(c.steps),
                hms(c.total_s).c_str(), c.efficiency, c.cost_usd);
  }
  if (shown < all.size()) std::printf("(%zu more: --top 0 lists them all)\n", all.size() - shown);
  if (skipped) std::printf("(%d layout(s) the model cannot take left out: heads, layers or vocabulary)\n", skipped);
  return 0;
}

}  // namespace

Run define_plan(CLI::App& cmd) {
  auto o = std::make_shared<PlanOptions>();
  cmd.add_option("spec", o->spec, "the job spec (docs/jobs.md)")->required()->type_name("JOB.yaml");
  cmd.add_option("--link", o->link,
                 "the link between hosts for every type, from catalog/links.yaml (default: each type's link_between, "
                 "else datacenter-25gbit)");
  cmd.add_option("--instance-types", o->types, "instance types to consider (default: the whole catalog)")
      ->delimiter(',');
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
  cmd.add_option("--startup-seconds", o->startup_s,
                 "a job's fixed cost inside its training time (first batches, collectives' set-up); default: "
                 "measured by the calibration")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--samples", o->samples,
                 "the training budget in samples: each layout takes the steps its global batch needs (as a study's "
                 "budget); default: the job's max_steps or epochs")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--top", o->top, "rows to print, best first (0: all)")->check(CLI::NonNegativeNumber)->capture_default_str();
  return [o](const auto&) { return plan_run(*o); };
}

}  // namespace strata::cli
