// A job spec resolved into what will run: the instance type from the catalog, ranks per host
// and threads per rank, the hosts, absolute paths for the job directory and the checkpoints,
// and the training configuration as the ranks will read it (or the script they run). Everything a spec can get wrong
// is found here, before the job directory exists. The plan is saved as plan.json, from which
// a Slurm batch step (on another host, later) runs the job's attempts.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jobs/instance_catalog.h"
#include "jobs/job_spec.h"
#include "train/training_args.h"

namespace strata::jobs {

struct JobPlan {
  std::string name;
  std::string job_dir;  // absolute
  Backend backend = Backend::Local;
  InstanceType instance;
  int instance_count = 1;
  int ranks_per_host = 1;
  int threads_per_rank = 1;
  std::vector<std::string> hosts;  // hostfile backend: the hosts used; otherwise empty
  std::string slurm_partition;
  bool spot = false;
  double max_run = 0, max_wait = 0, grace = 0;
  std::vector<SimulatedInterruption> simulate_interruptions;
  double simulate_capacity_wait = 0;
  std::string checkpoint_dir;  // checkpoint_uri, resolved and absolute
  std::string local_dir;       // checkpoint_local_path, absolute: the ranks' output_dir
  std::string working_dir;     // where the ranks run (relative paths of the training config)
  std::vector<std::string> environment;  // NAME=value for the ranks
  std::string strata_binary;
  // A script entry point (absolute; "" when the ranks run strata train), its interpreter, its
  // command-line arguments, and what it reads from SM_HPS and SM_TRAINING_ENV.
  std::string entry_point;
  std::string python;
  std::vector<std::string> script_arguments;
  nlohmann::json hyperparameters = nlohmann::json::object();
  nlohmann::json distribution;  // null when the spec has none

  int world_size() const { return instance_count * ranks_per_host; }
  bool runs_script() const { return !entry_point.empty(); }
  std::string training_config_path() const { return job_dir + "/training.yaml"; }
  // A script's SM_OUTPUT_DIR, and in it SM_MODEL_DIR and SM_OUTPUT_DATA_DIR (SageMaker's
  // /opt/ml/output, /opt/ml/model and /opt/ml/output/data); the model moves to <job dir>/model
  // when the job completes.
  std::string output_dir() const { return job_dir + "/output"; }
  std::string model_dir() const { return job_dir + "/output/model"; }
  std::string output_data_dir() const { return job_dir + "/output/data"; }
  nlohmann::json to_json() const;
  static JobPlan from_json(const nlohmann::json& j);
};

struct PlannedJob {
  JobPlan plan;
  std::string training_yaml;  // the effective training configuration; "" for a script entry point
  TrainingArguments args;     // its arguments (defaults for a script entry point)
  std::vector<std::string> notes;  // things the user should know (cores described vs present, ...)
};

struct PlanInputs {
  JobSpec spec;
  InstanceCatalog catalog;
  std::string job_name;
  std::string working_dir;
  std::string strata_binary;
  int local_cores = 1;  // this machine's, for the local backend
  int local_gpus = 0;   // this machine's GPUs (kernels::cuda_device_count), for the local backend
};

PlannedJob make_plan(const PlanInputs& in);

// Ranks per instance: `distribution.mpi.processes_per_host` when the spec sets it (the
// Estimator's spelling), else one per GPU, else one using all the instance's cores.
int ranks_per_instance(const InstanceType& t, const std::string& distribution_yaml, const std::string& where);

struct HostSlots {
  std::string host;
  int slots = 0;  // 0: not given
  int line = 0;
};
// An OpenMPI hostfile ("host [slots=N] [max_slots=M]" per line, # comments).
std::vector<HostSlots> read_hostfile(const std::string& path);

}  // namespace strata::jobs
