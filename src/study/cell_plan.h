// One cell of a study turned into the job that runs it: the base job spec with the cell's
// axis values applied, the samples budget turned into max_steps for the cell's global batch,
// and the learning rate scaled against the reference global batch. The job is planned as
// `strata job run` plans it and its parallel layout checked as `strata train` checks it: a
// cell that cannot run is marked invalid with the reason (skipped, not fatal).
#pragma once
#include <cstdint>
#include <string>

#include "study/study_spec.h"

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
  double gradient_bytes = 0;  // what each step all-reduces (data parallel: every parameter's gradient)

  std::string dir(const CellContext& c) const { return c.study_dir + "/cells/" + id; }
  std::string job_name(int repeat) const { return id + "-r" + std::to_string(repeat); }
};

CellPlan plan_cell(const CellContext& ctx, const CellValues& values);

// lr x (global / reference) for linear, x sqrt(global / reference) for sqrt, unchanged for none.
double scaled_learning_rate(double lr, const std::string& scaling, int64_t global_batch, int64_t reference);

}  // namespace strata::study
