#include "jobs/job_plan.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "jobs/checkpoint_store.h"
#include "jobs/process.h"
#include "jobs/script_entry.h"
#include "util/error.h"

namespace strata::jobs {

namespace fs = std::filesystem;

namespace {

std::string absolute(const std::string& p, const std::string& base) {
  return fs::weakly_canonical(fs::path(base) / p).string();
}

void check_hostfile(const JobSpec& s, const InstanceType& t, int ranks_per_host, std::vector<std::string>& hosts) {
  const std::vector<HostSlots> all = read_hostfile(s.hostfile);
  if (static_cast<int>(all.size()) < s.instance_count)
    fail(s.hostfile, " names ", all.size(), " host(s); instance_count is ", s.instance_count);
  for (int i = 0; i < s.instance_count; ++i) {
    const HostSlots& h = all[i];
    const std::string at = cat(s.hostfile, " line ", h.line, ": ", h.host);
    if (h.slots > t.cores)
      fail(at, " slots=", h.slots, ", but an ", t.name, " instance has ", t.cores,
           " core(s): the hostfile names more slots than exist");
    if (h.slots > 0 && h.slots < ranks_per_host)
      fail(at, " slots=", h.slots, ", but the job runs ", ranks_per_host, " rank(s) per host");
    hosts.push_back(h.host);
  }
}

// Seconds as numbers, steps as {"at_step": N}: the spec's own spelling.
nlohmann::json interruptions_json(const std::vector<SimulatedInterruption>& list) {
  nlohmann::json out = nlohmann::json::array();
  for (const SimulatedInterruption& i : list)
    out.push_back(i.at_step() ? nlohmann::json{{"at_step", i.step}} : nlohmann::json(i.seconds));
  return out;
}

// The training configuration the ranks read: the spec's, writing where the runner uploads
// from, with the threads the plan gives each rank.
void plan_training_config(const JobSpec& s, PlannedJob& pj) {
  const JobPlan& p = pj.plan;
  NameValues settings = {{"output_dir", p.local_dir}, {"overwrite_output_dir", "true"}};
  const bool threads_given = std::any_of(s.hyperparameters.begin(), s.hyperparameters.end(),
                                         [](const auto& kv) { return kv.first == "num_threads"; });
  if (!threads_given) settings.emplace_back("num_threads", std::to_string(p.threads_per_rank));
  pj.training_yaml = effective_training_config(s, settings);
  pj.args = parse_training_arguments(pj.training_yaml, s.training_config_source);
  if (!pj.args.resume_from_checkpoint.empty())
    fail(s.training_config_source, ": resume_from_checkpoint is the job runner's to set: a job resumes from the newest "
         "checkpoint in its checkpoint_uri (", p.checkpoint_dir, "); copy the checkpoint there instead");
  if (!pj.args.do_train) fail(s.training_config_source, ": do_train is false; a job trains");
  if (pj.args.save_strategy == "no")
    pj.notes.push_back("save_strategy is \"no\": only interruptions write checkpoints; an attempt that ends any "
                       "other way restarts from the last of those");
}

// The script every rank runs, with its arguments and what SM_HPS and SM_TRAINING_ENV tell it.
// The hyperparameters are the script's own: nothing here can check them.
void plan_script(const JobSpec& s, const std::string& working_dir, JobPlan& p) {
  p.entry_point = absolute(s.entry_point, working_dir);
  p.python = s.python;
  if (!on_path(p.python))
    fail(s.source, ": python '", p.python, "' (the interpreter of entry_point) is not ",
         p.python.find('/') == std::string::npos ? "on PATH" : "an executable file", "; set python: to its path");
  p.script_arguments = script_arguments(s.hyperparameters);
  p.hyperparameters = typed_hyperparameters(s.hyperparameters, s.source);
  if (!s.distribution.empty()) p.distribution = yaml_to_json(s.distribution, s.source);
}

}  // namespace

nlohmann::json JobPlan::to_json() const {
  return {{"name", name},
          {"job_dir", job_dir},
          {"backend", backend_name(backend)},
          {"instance",
           {{"name", instance.name},
            {"cores", instance.cores},
            {"gpus", instance.gpus},
            {"memory_gib", instance.memory_gib},
            {"on_demand_usd_per_hour", instance.on_demand_usd_per_hour},
            {"spot_usd_per_hour", instance.spot_usd_per_hour}}},
          {"instance_count", instance_count},
          {"ranks_per_host", ranks_per_host},
          {"threads_per_rank", threads_per_rank},
          {"hosts", hosts},
          {"slurm_partition", slurm_partition},
          {"use_spot_instances", spot},
          {"max_run", max_run},
          {"max_wait", max_wait},
          {"termination_grace_period", grace},
          {"simulate_interruptions", interruptions_json(simulate_interruptions)},
          {"simulate_capacity_wait", simulate_capacity_wait},
          {"checkpoint_uri", checkpoint_dir},
          {"checkpoint_local_path", local_dir},
          {"working_dir", working_dir},
          {"environment", environment},
          {"strata_binary", strata_binary},
          {"entry_point", entry_point},
          {"python", python},
          {"script_arguments", script_arguments},
          {"hyperparameters", hyperparameters},
          {"distribution", distribution}};
}

JobPlan JobPlan::from_json(const nlohmann::json& j) {
  JobPlan p;
  p.name = j.at("name");
  p.job_dir = j.at("job_dir");
  const std::string b = j.at("backend");
  p.backend = b == "slurm" ? Backend::Slurm : b == "hostfile" ? Backend::Hostfile : Backend::Local;
  const auto& t = j.at("instance");
  p.instance = {t.at("name"), t.at("cores"), t.at("gpus"), t.at("memory_gib"), t.at("on_demand_usd_per_hour"),
                t.at("spot_usd_per_hour"), {}, {}, {}};  // the projection's fields are not recorded
  p.instance_count = j.at("instance_count");
  p.ranks_per_host = j.at("ranks_per_host");
  p.threads_per_rank = j.at("threads_per_rank");
  p.hosts = j.at("hosts").get<std::vector<std::string>>();
  p.slurm_partition = j.at("slurm_partition");
  p.spot = j.at("use_spot_instances");
  p.max_run = j.at("max_run");
  p.max_wait = j.at("max_wait");
  p.grace = j.at("termination_grace_period");
  for (const auto& i : j.at("simulate_interruptions"))
    p.simulate_interruptions.push_back(i.is_object() ? SimulatedInterruption{0, i.at("at_step").get<int64_t>()}
                                                     : SimulatedInterruption{i.get<double>(), -1});
  p.simulate_capacity_wait = j.at("simulate_capacity_wait");
  p.checkpoint_dir = j.at("checkpoint_uri");
  p.local_dir = j.at("checkpoint_local_path");
  p.working_dir = j.at("working_dir");
  p.environment = j.at("environment").get<std::vector<std::string>>();
  p.strata_binary = j.at("strata_binary");
  // Absent from the plans of jobs recorded before script entry points.
  p.entry_point = j.value("entry_point", "");
  p.python = j.value("python", "");
  p.script_arguments = j.value("script_arguments", std::vector<std::string>{});
  p.hyperparameters = j.value("hyperparameters", nlohmann::json::object());
  p.distribution = j.value("distribution", nlohmann::json());
  return p;
}

int ranks_per_instance(const InstanceType& t, const std::string& distribution_yaml, const std::string& where) {
  if (!distribution_yaml.empty()) {
    const YAML::Node d = YAML::Load(distribution_yaml);
    if (d["mpi"] && d["mpi"]["processes_per_host"]) {
      int n = 0;
      if (!YAML::convert<int>::decode(d["mpi"]["processes_per_host"], n) || n < 1)
        fail(where, ": distribution.mpi.processes_per_host expects an integer >= 1");
      if (n > t.cores) fail(where, ": distribution.mpi.processes_per_host is ", n, " but an ", t.name, " instance has ", t.cores, " core(s)");
      return n;
    }
  }
  return std::max(1, t.gpus);
}

std::vector<HostSlots> read_hostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("hostfile ", path, " cannot be read");
  std::vector<HostSlots> out;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    HostSlots h;
    h.line = n;
    if (!(words >> h.host)) continue;
    for (std::string w; words >> w;) {
      if (w.starts_with("slots=")) {
        try {
          h.slots = std::stoi(w.substr(6));
        } catch (const std::exception&) {
          fail(path, " line ", n, ": '", w, "' is not slots=<number>");
        }
        if (h.slots < 1) fail(path, " line ", n, ": slots must be at least 1");
      } else if (!w.starts_with("max_slots=")) {
        fail(path, " line ", n, ": unknown field '", w, "' (expected slots=N or max_slots=N)");
      }
    }
    out.push_back(h);
  }
  if (out.empty()) fail("hostfile ", path, " names no host");
  return out;
}

PlannedJob make_plan(const PlanInputs& in) {
  const JobSpec& s = in.spec;
  PlannedJob pj;
  JobPlan& p = pj.plan;
  p.name = in.job_name;
  p.backend = s.backend;
  p.instance = in.catalog.at(s.instance_type, s.source);
  p.instance_count = s.instance_count;
  p.ranks_per_host = ranks_per_instance(p.instance, s.distribution, s.source);
  p.slurm_partition = s.slurm_partition;
  p.spot = s.use_spot_instances;
  p.max_run = s.max_run;
  p.max_wait = s.max_wait;
  p.grace = s.termination_grace_period;
  p.simulate_interruptions = s.simulate_interruptions;
  p.simulate_capacity_wait = s.simulate_capacity_wait;
  p.working_dir = in.working_dir;
  p.strata_binary = in.strata_binary;
  for (const auto& [k, v] : s.environment) p.environment.push_back(k + "=" + v);
  p.job_dir = absolute(fs::path(s.output_path) / p.name, in.working_dir);
  p.checkpoint_dir = absolute(s.checkpoint_uri.empty() ? p.job_dir + "/checkpoints"
                                                       : CheckpointStore::resolve(s.checkpoint_uri, s.source),
                              in.working_dir);
  p.local_dir = absolute(s.checkpoint_local_path.empty() ? p.job_dir + "/work" : s.checkpoint_local_path, in.working_dir);
  if (p.local_dir == p.checkpoint_dir)
    fail(s.source, ": checkpoint_local_path and checkpoint_uri are the same directory (", p.local_dir,
         "); the ranks write to the first, the runner copies to the second");

  const int cores_per_rank = std::max(1, p.instance.cores / p.ranks_per_host);
  p.threads_per_rank = cores_per_rank;
  if (p.backend == Backend::Local) {
    // Every instance of a local job is this machine: its ranks share its cores.
    const int here = std::max(1, in.local_cores / p.world_size());
    if (here < cores_per_rank) {
      pj.notes.push_back(cat(p.instance_count, " x ", p.instance.name, " describe ", p.instance_count * p.instance.cores,
                             " cores; this machine has ", in.local_cores, ": each of the ", p.world_size(), " ranks gets ",
                             here, " thread(s)"));
      p.threads_per_rank = here;
    }
  } else if (p.backend == Backend::Hostfile) {
    check_hostfile(s, p.instance, p.ranks_per_host, p.hosts);
    if (!on_path("mpirun")) fail(s.source, ": backend hostfile needs mpirun, which is not on PATH (Debian: openmpi-bin)");
  } else {
    for (const char* tool : {"sbatch", "squeue", "scontrol", "srun"})
      if (!on_path(tool))
        fail(s.source, ": backend slurm needs ", tool, ", which is not on PATH (Debian: slurm-client; a test cluster: "
             "scripts/slurm_cluster.sh)");
  }
  if (p.backend == Backend::Local && p.world_size() > 1 && !on_path("mpirun"))
    fail(s.source, ": ", p.world_size(), " ranks run through mpirun, which is not on PATH (Debian: openmpi-bin)");

  if (s.runs_script()) plan_script(s, in.working_dir, p);
  else plan_training_config(s, pj);
  if (p.backend == Backend::Local && p.instance.gpus > 0 && !pj.args.use_cpu) {
    // Every instance of a local job is this machine: the GPUs they describe must be here, one
    // per rank (ranks sharing a GPU are for `strata launch` tests, not for a job spec).
    const int asked = p.instance_count * p.instance.gpus;
    if (in.local_gpus == 0)
      pj.notes.push_back(cat(p.instance_count, " x ", p.instance.name, " describe ", asked,
                             " GPU(s); this machine has none: the ranks train on its CPUs"));
    else if (asked > in.local_gpus)
      fail(s.source, ": ", p.instance_count, " x ", p.instance.name, " ask for ", asked, " GPUs, but this machine has ",
           in.local_gpus, ". Ask for at most ", in.local_gpus, " GPU(s) (instance_count, or an instance_type with fewer "
           "GPUs), or set use_cpu: true in the hyperparameters to train on the CPUs");
  }
  CheckpointStore(p.checkpoint_dir).check_writable(s.source);
  return pj;
}

}  // namespace strata::jobs
