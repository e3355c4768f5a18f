// A scaling and cost study (docs/studies.md): a base training job (a `strata job` spec) and
// a grid of axes, each cell one job. The grid is one mapping of axis -> list of values, or a
// list of such mappings: each is crossed, and the study runs the cells of all of them.
// Parsed from YAML and checked before anything runs; errors name the file, line and field.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace strata::study {

// The axes a grid may vary, in the order a cell lists them.
enum class Axis {
  InstanceType,
  InstanceCount,
  ProcessesPerHost,
  Cluster,  // local (this machine) | netns | netns:RATE (network-namespace hosts, egress limited to RATE)
  Layout,   // a mapping of parallel options (tensor_parallel_degree, pipeline_parallel_degree, ...)
  PerDeviceTrainBatchSize,
  MaxTrainSamples,
  DataloaderNumWorkers,
  LrScaling,  // none | linear | sqrt, against reference_global_batch
};
const std::vector<std::pair<Axis, std::string>>& axis_names();
const char* axis_name(Axis a);

// One cell: a value (YAML text, flow style for mappings) for each axis the grid names.
using CellValues = std::vector<std::pair<Axis, std::string>>;

struct Budget {
  int64_t samples = 0;    // every cell trains on this many samples (max_steps = samples / global batch)
  int64_t max_steps = 0;  // or every cell runs this many steps

  // The steps a layout of this global batch takes: samples / global batch rounded (at least
  // one), or max_steps.
  int64_t steps(int64_t global_batch) const {
    return samples > 0 ? std::max<int64_t>(1, std::llround(static_cast<double>(samples) / global_batch)) : max_steps;
  }
};

// Layouts past this machine to project from the one-rank cell: `instance_counts` hosts of
// `instance_type`, `ranks_per_host` each, all-reducing over shared memory within a host and
// over `link` (catalog/links.yaml) between hosts; each of `layouts` (mappings of parallel
// options, as the grid's layout axis; {} is data parallelism only, the default) on each count.
struct ProjectionSpec {
  std::string instance_type;
  int ranks_per_host = 1;
  std::vector<int> instance_counts;
  std::string link;
  std::vector<std::string> layouts;
};

struct StudySpec {
  std::string source;  // the study file, named in errors
  std::string name;
  std::string job_path;  // the base job spec
  std::string output_dir;
  int repeats = 1;
  Budget budget;
  int64_t reference_global_batch = 0;  // for lr_scaling linear / sqrt
  std::vector<CellValues> cells;       // the grid, expanded; duplicates removed, first kept
  ProjectionSpec projection;           // instance_counts empty: none asked for
  std::string grid_text;               // canonical text of the grid, for the fingerprint
};

StudySpec parse_study_spec(const std::string& yaml_text, const std::string& source);
StudySpec load_study_spec(const std::string& path);

// What identifies a study's results: the base job, its training config, the budget, the
// reference batch and the grid (repeats are not part of it: more repeats extend a study).
uint64_t study_fingerprint(const StudySpec& s, const std::string& job_text, const std::string& training_text);

}  // namespace strata::study
