// One cell of a study turned into the job that runs it: the base job spec with the cell's
// axis values applied, the samples budget turned into max_steps for the cell's global batch,
// and the learning rate scaled against the reference global batch. The job is planned as
// `strata job run` plans it and its parallel layout checked as `strata train` checks it: a
// cell that cannot run is marked invalid with the reason (skipped, not fatal).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "study/projection.h"
#include "study/study_spec.h"
#include "train/training_args.h"

namespace strata::study {

struct CellContext {
  const StudySpec* study = nullptr;
  std::string base_job_text;  // the base job spec's YAML
  std::string study_dir;      // absolute
  std::string working_dir;    // where the cells' jobs run (relative paths of the specs)
  std::string strata_binary;
  std::string default_catalog;  // the instance catalog when the base job names none
  int local_cores = 1;
  std::string netns_subnet;  // A.B.C: the /24 of the network-namespace hosts of netns cells
};

struct CellPlan {
  CellValues values;
  std::string id;     // c<8 hex digits>, from the values: stable across runs of the study
  std::string label;  // the values, short, for people
  std::string invalid;  // why the cell cannot run; "" when it can
  std::string spec_yaml;  // the cell's job spec
  std::string cluster = "local";
  std::string rate;  // netns cells: the link rate (tc), "" for unlimited
  std::string instance_type;
  int instance_count = 1, ranks_per_host = 1, world_size = 1, threads_per_rank = 1;
  int per_device_batch = 0, dataloader_num_workers = 0, data_parallel = 1;
  int64_t max_train_samples = 0;  // 0: the whole training file
  int64_t global_batch = 0, max_steps = 0, samples = 0;
  std::string lr_scaling = "none";
  double learning_rate = 0;
  double usd_per_hour = 0;  // all the cell's instances together
  TrainingArguments args;   // the cell's training, as its job runs it
  ParallelLayout layout;    // data x pipeline x tensor, with the pipeline's blocks per stage

  // The unit profiles its projection needs: at its micro-batch and tensor-parallel degree, and
  // (for a one-rank cell, the reference of the others) at the whole batch on one rank.
  ProfileKey micro_profile() const;
  ProfileKey whole_batch_profile() const;

  std::string dir(const CellContext& c) const { return c.study_dir + "/cells/" + id; }
  std::string job_name(int repeat) const { return id + "-r" + std::to_string(repeat); }
};

CellPlan plan_cell(const CellContext& ctx, const CellValues& values);

// The unit profile a layout of these arguments needs: its micro-batch (per-device batch /
// microbatches) as rank 0 of its tensor-parallel degree, with `threads` threads. The default
// layout gives the whole batch on one rank.
ProfileKey layout_profile(const TrainingArguments& a, const ParallelLayout& l, int threads);

// The layout a job's arguments give on `world` ranks: the pipeline and tensor-parallel degrees,
// the rest data parallel, and the blocks of each stage as the trainer splits them. Throws
// strata::Error (naming config_path) where the layout cannot run.
ParallelLayout parallel_layout(const TrainingArguments& a, const ModelConfig& cfg, int world,
                               const std::string& config_path);

// A layout past this machine (the study's `projection:`), planned from the reference cell.
struct ProjectedLayout {
  int instances = 1, ranks_per_host = 1;
  std::string layout_text;  // the parallel options it sets ({} for data parallelism only)
  ParallelLayout layout;
  ProfileKey profile;  // at its micro-batch and tensor-parallel degree, the reference's threads
};

// spec.projection's layouts on each of its instance counts, with the reference cell's training.
// A layout that cannot run on a count (degrees that do not divide the ranks, a split the model
// cannot take) is left out, its reason added to `skipped`.
std::vector<ProjectedLayout> plan_projected_layouts(const StudySpec& spec, const CellPlan& ref,
                                                    std::vector<std::string>& skipped);

// lr x (global / reference) for linear, x sqrt(global / reference) for sqrt, unchanged for none.
double scaled_learning_rate(double lr, const std::string& scaling, int64_t global_batch, int64_t reference);

}  // namespace strata::study
