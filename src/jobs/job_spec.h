// A training job as SageMaker's Estimator describes one (base_job_name, instance_type,
// instance_count, hyperparameters, distribution, checkpoint_s3_uri, use_spot_instances,
// max_run, max_wait, entry_point, ...), plus strata's training configuration and where to run
// it. What the ranks run is a strata train configuration (training_config) or a Python script
// (entry_point). Parsed from YAML and checked before anything starts (docs/jobs.md lists every key).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::jobs {

enum class Backend { Local, Hostfile, Slurm };
const char* backend_name(Backend b);

using NameValues = std::vector<std::pair<std::string, std::string>>;

// A simulated spot interruption of one attempt: `seconds` after the attempt starts, or, with
// `step` >= 0, once its ranks have finished that step. At a step the ranks pause until the
// interruption reaches them (the runner fires it when rank 0 says it waits), so it lands after
// the same step on any machine, however fast or loaded: what tests need.
struct SimulatedInterruption {
  double seconds = 0;
  int64_t step = -1;
  bool at_step() const { return step >= 0; }
};

struct JobSpec {
  std::string source;  // the spec file, named in errors
  // The Estimator's names and meanings.
  std::string base_job_name = "strata-train";
  std::string instance_type;
  int instance_count = 1;
  // name, value as YAML scalar text: they override the training config, or become the
  // script's `--name value` arguments.
  NameValues hyperparameters;
  std::string distribution;    // YAML text of the mapping, "" when absent; becomes the training config's own key
  std::string checkpoint_uri;  // a directory or file:// URI (alias checkpoint_s3_uri); "" = <job dir>/checkpoints
  std::string checkpoint_local_path;  // "" = <job dir>/work
  std::string output_path = "out/jobs";
  bool use_spot_instances = false;
  double max_run = 86400;  // seconds of training (SageMaker's default: one day)
  double max_wait = 0;     // seconds of training plus waiting for spot capacity; 0 = not set
  NameValues environment;
  std::string entry_point;  // a Python script every rank runs, instead of training_config; "" = none
  // strata's.
  std::string python = "python3";      // the interpreter of entry_point
  std::string training_config_source;  // the training YAML's path, or "<spec> training_config" when inline
  std::string training_config_yaml;    // its text; "" for an entry_point job
  Backend backend = Backend::Local;
  std::string hostfile;
  std::string slurm_partition;
  std::string instance_catalog;  // "" = the default catalog
  // Seconds the ranks get, after a stop signal, to finish their step and write a checkpoint
  // before they are killed (SageMaker gives a spot instance two minutes' notice).
  double termination_grace_period = 120;
  std::vector<SimulatedInterruption> simulate_interruptions;  // the k-th interrupts the k-th attempt
  double simulate_capacity_wait = 0;           // seconds until spot capacity returns

  bool runs_script() const { return !entry_point.empty(); }
};

// Every key is checked: unknown ones get the nearest valid name, values their expected type,
// and max_wait < max_run, max_wait or interruptions without spot, a hostfile without the
// hostfile backend, both or neither of training_config and entry_point, an entry_point that
// is not a file, ... are refused with the file and line.
JobSpec parse_job_spec(const std::string& yaml_text, const std::string& source);
JobSpec load_job_spec(const std::string& path);

// The training configuration the job runs, as YAML: training_config with the job's
// distribution as its `distribution` key, the hyperparameters applied as `--set` applies
// them, then `settings` (the plan's output_dir, num_threads, ...). Validated as `strata train`
// validates a config; errors name the training config, or the spec's hyperparameters.
std::string effective_training_config(const JobSpec& spec, const NameValues& settings);

// YAML text as JSON, plain scalars typed by YAML 1.2's core schema (null, true / false, ints,
// floats; .inf and .nan stay strings, which JSON cannot hold), quoted ones strings: for the
// spec in `strata job status --json`, the distribution and the hyperparameters a script gets.
nlohmann::json yaml_to_json(const std::string& yaml_text, const std::string& source);

}  // namespace strata::jobs
