#include "study/cell_plan.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "io/files.h"
#include "jobs/job_plan.h"
#include "models/config.h"
#include "models/registry.h"
#include "train/parallel_layout.h"
#include "train/pipeline_partition.h"
#include "util/error.h"

namespace strata::study {

namespace {

namespace fs = std::filesystem;

std::string cell_id(const CellValues& values) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the values: the same cell gets the same id on every run
  for (const auto& [a, v] : values)
    for (unsigned char c : cat(axis_name(a), "=", v, ";")) {
      h ^= c;
      h *= 1099511628211ull;
    }
  char buf[16];
  std::snprintf(buf, sizeof buf, "c%08llx", static_cast<unsigned long long>(h & 0xffffffffull));
  return buf;
}

std::string label_of(const CellValues& values) {
  std::string s;
  for (const auto& [a, v] : values) s += cat(s.empty() ? "" : ", ", axis_name(a), " ", v);
  return s;
}

// The base job with the cell's values applied (the budget and learning rate come later, once
// the plan knows the global batch).
YAML::Node cell_job(const CellContext& ctx, const CellPlan& c) {
  YAML::Node job = YAML::Clone(YAML::Load(ctx.base_job_text));
  if (!job.IsMap()) fail(ctx.study->job_path, ": expected a YAML mapping of job options (docs/jobs.md)");
  if (!job["hyperparameters"]) job["hyperparameters"] = YAML::Node(YAML::NodeType::Map);
  YAML::Node hp = job["hyperparameters"];
  for (const auto& [a, v] : c.values) {
    switch (a) {
      case Axis::InstanceType: job["instance_type"] = v; break;
      case Axis::InstanceCount: job["instance_count"] = std::stoi(v); break;
      case Axis::ProcessesPerHost: job["distribution"]["mpi"]["processes_per_host"] = std::stoi(v); break;
      case Axis::PerDeviceTrainBatchSize: hp["per_device_train_batch_size"] = std::stoi(v); break;
      case Axis::MaxTrainSamples: hp["max_train_samples"] = std::stoll(v); break;
      case Axis::DataloaderNumWorkers: hp["dataloader_num_workers"] = std::stoi(v); break;
      case Axis::Layout:
        for (const auto& kv : YAML::Load(v)) hp[kv.first.Scalar()] = kv.second;
        break;
      case Axis::Cluster:
      case Axis::LrScaling: break;  // where the job runs, and the learning rate: applied below
    }
  }
  // Every cell keeps its checkpoints in its own job directory: one cell's must never resume another.
  job.remove("checkpoint_uri");
  job.remove("checkpoint_s3_uri");
  job.remove("checkpoint_local_path");
  job["output_path"] = ctx.study_dir + "/jobs";
  if (c.cluster != "local") {
    job["backend"] = "hostfile";
    job["hostfile"] = c.dir(ctx) + "/hostfile";
  }
  return job;
}

// The hostfile netns_cluster.sh writes for its hosts (<subnet>.<i>), with the cell's slots.
void write_netns_hostfile(const CellContext& ctx, const CellPlan& c, int hosts, int slots) {
  std::string text;
  for (int i = 1; i <= hosts; ++i) text += cat(ctx.netns_subnet, ".", i, " slots=", slots, "\n");
  fs::create_directories(c.dir(ctx));
  io::write_file_atomic(c.dir(ctx) + "/hostfile", text);
}

jobs::PlannedJob plan_job(const CellContext& ctx, const CellPlan& c, const YAML::Node& job) {
  jobs::PlanInputs in;
  in.spec = jobs::parse_job_spec(YAML::Dump(job) + "\n", c.dir(ctx) + "/job.yaml");
  in.catalog = jobs::InstanceCatalog::load(in.spec.instance_catalog.empty() ? ctx.default_catalog : in.spec.instance_catalog);
  in.job_name = c.job_name(1);
  in.working_dir = ctx.working_dir;
  in.strata_binary = ctx.strata_binary;
  in.local_cores = ctx.local_cores;
  return jobs::make_plan(in);
}

}  // namespace

ParallelLayout parallel_layout(const TrainingArguments& a, const ModelConfig& cfg, int world,
                               const std::string& config_path) {
  ParallelLayout l;
  l.pp = a.pipeline_parallel_degree;
  l.tp = a.tensor_parallel_degree;
  if (world % (l.pp * l.tp) != 0)
    fail("pipeline_parallel_degree ", l.pp, " x tensor_parallel_degree ", l.tp, " does not divide ", world, " ranks");
  l.dp = world / (l.pp * l.tp);
  l.microbatches = a.microbatches;
  if (a.per_device_train_batch_size % l.microbatches != 0)
    fail("microbatches ", l.microbatches, " does not divide per_device_train_batch_size ", a.per_device_train_batch_size);
  l.accumulation = a.gradient_accumulation_steps;
  l.zero_stage = a.sharding_stage();
  if (l.tp > 1) check_tensor_split(cfg, l.tp, config_path);
  if (l.pp > 1) l.stage_blocks = partition_blocks(*make_model<float>(cfg), a, l.pp, config_path);
  return l;
}

std::vector<ProjectedLayout> plan_projected_layouts(const StudySpec& spec, const CellPlan& ref,
                                                    std::vector<std::string>& skipped) {
  const ProjectionSpec& ps = spec.projection;
  const std::string config_path = ref.args.model_name_or_path + "/config.json";
  const ModelConfig cfg = load_model_config(ref.args.model_name_or_path);
  std::vector<ProjectedLayout> out;
  for (const std::string& text : ps.layouts)
    for (int n : ps.instance_counts) {
      ProjectedLayout p;
      p.instances = n;
      p.ranks_per_host = ps.ranks_per_host;
      p.layout_text = text;
      try {
        TrainingArguments a = ref.args;
        for (const auto& kv : YAML::Load(text))
          set_training_argument(a, kv.first.Scalar(), kv.second, cat(spec.source, " projection.layouts ", text));
        p.layout = parallel_layout(a, cfg, n * ps.ranks_per_host, config_path);
        p.profile = layout_profile(a, p.layout, ref.threads_per_rank);
        out.push_back(p);
      } catch (const Error& e) {
        skipped.push_back(cat(n, " x ", ps.instance_type, " ", text, ": ", e.what()));
      }
    }
  return out;
}

ProfileKey layout_profile(const TrainingArguments& a, const ParallelLayout& l, int threads) {
  return {a.model_name_or_path, a.per_device_train_batch_size / l.microbatches, a.sequence_length(), l.tp, threads};
}

ProfileKey CellPlan::micro_profile() const { return layout_profile(args, layout, threads_per_rank); }

ProfileKey CellPlan::whole_batch_profile() const { return layout_profile(args, {}, threads_per_rank); }

double scaled_learning_rate(double lr, const std::string& scaling, int64_t global_batch, int64_t reference) {
  if (scaling == "none") return lr;
  const double ratio = static_cast<double>(global_batch) / static_cast<double>(reference);
  return scaling == "linear" ? lr * ratio : lr * std::sqrt(ratio);
}

CellPlan plan_cell(const CellContext& ctx, const CellValues& values) {
  CellPlan c;
  c.values = values;
  c.id = cell_id(values);
  c.label = label_of(values);
  int slots = 1;
  for (const auto& [a, v] : values) {
    if (a == Axis::Cluster) c.cluster = v;
    if (a == Axis::LrScaling) c.lr_scaling = v;
    if (a == Axis::ProcessesPerHost) slots = std::stoi(v);
  }
  if (c.cluster.rfind("netns:", 0) == 0) c.rate = c.cluster.substr(6);
  try {
    YAML::Node job = cell_job(ctx, c);
    if (c.cluster != "local") write_netns_hostfile(ctx, c, job["instance_count"] ? job["instance_count"].as<int>() : 1, slots);
    jobs::PlannedJob pj = plan_job(ctx, c, job);
    const jobs::JobPlan& p = pj.plan;
    dist::Layout layout;
    layout.world_size = p.world_size();
    layout.local_world_size = p.ranks_per_host;
    const dist::RankGrid grid = make_rank_grid(pj.args, layout);
    const ModelConfig cfg = load_model_config(pj.args.model_name_or_path);
    check_parallel_layout(pj.args, cfg, pj.args.model_name_or_path + "/config.json", grid, layout);
    c.args = pj.args;
    c.layout = parallel_layout(pj.args, cfg, p.world_size(), pj.args.model_name_or_path + "/config.json");
    c.instance_type = p.instance.name;
    c.instance_count = p.instance_count;
    c.ranks_per_host = p.ranks_per_host;
    c.world_size = p.world_size();
    c.threads_per_rank = p.threads_per_rank;
    c.usd_per_hour = (p.spot ? p.instance.spot_usd_per_hour : p.instance.on_demand_usd_per_hour) * p.instance_count;
    c.per_device_batch = pj.args.per_device_train_batch_size;
    c.dataloader_num_workers = pj.args.dataloader_num_workers;
    c.max_train_samples = pj.args.max_train_samples > 0 ? pj.args.max_train_samples : 0;
    c.data_parallel = grid.size(dist::Axis::Data);
    c.global_batch = static_cast<int64_t>(pj.args.per_device_train_batch_size) * pj.args.gradient_accumulation_steps *
                     c.data_parallel;
    c.max_steps = ctx.study->budget.steps(c.global_batch);
    c.samples = c.max_steps * c.global_batch;
    c.learning_rate = scaled_learning_rate(pj.args.learning_rate, c.lr_scaling, c.global_batch,
                                           ctx.study->reference_global_batch);
    job["hyperparameters"]["max_steps"] = c.max_steps;
    job["hyperparameters"]["learning_rate"] = c.learning_rate;
    plan_job(ctx, c, job);  // the final spec plans too
    c.spec_yaml = YAML::Dump(job) + "\n";
  } catch (const Error& e) {
    c.invalid = e.what();
  }
  return c;
}

}  // namespace strata::study
