#include "jobs/script_entry.h"

#include <signal.h>
#include <unistd.h>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "util/error.h"

extern char** environ;  // POSIX: the process environment

namespace strata::jobs {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kChannelPrefix = "SM_CHANNEL_";

// A hyperparameter's value as the script sees it on its command line.
std::string argument_value(const std::string& yaml_text) {
  const YAML::Node v = YAML::Load(yaml_text);
  if (v.IsNull()) return "None";
  const std::string& text = v.Scalar();
  if (v.Tag() != "?") return text;  // quoted: a string as written
  if (text == "true" || text == "True" || text == "TRUE") return "True";
  if (text == "false" || text == "False" || text == "FALSE") return "False";
  return text;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The first of `names` set to a number in the environment.
int rank_from(const EnvLookup& env, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (const char* v = env(n); v && *v) return std::atoi(v);
  return 0;
}

std::string module_name(const std::string& entry_point) { return fs::path(entry_point).stem().string(); }

}  // namespace

std::vector<std::string> script_arguments(const NameValues& hyperparameters) {
  NameValues sorted = hyperparameters;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> args;
  for (const auto& [name, text] : sorted) {
    args.push_back((name.size() == 1 ? "-" : "--") + name);
    args.push_back(argument_value(text));
  }
  return args;
}

nlohmann::json typed_hyperparameters(const NameValues& hyperparameters, const std::string& source) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, text] : hyperparameters) out[name] = yaml_to_json(text, source + " hyperparameters." + name);
  return out;
}

RankPlace rank_place(const JobPlan& p, const EnvLookup& env,
                     const std::function<std::vector<std::string>(const std::string&)>& expand_nodelist) {
  RankPlace place;
  place.rank = rank_from(env, {"OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMIX_RANK"});
  if (p.backend == Backend::Hostfile) {
    place.hosts = p.hosts;
  } else if (p.backend == Backend::Slurm) {
    if (const char* nodes = env("SLURM_JOB_NODELIST")) place.hosts = expand_nodelist(nodes);
  } else {
    for (int i = 1; i <= p.instance_count; ++i) place.hosts.push_back("algo-" + std::to_string(i));
  }
  // mpirun and srun fill the hosts in order, ranks_per_host ranks each.
  const size_t host = static_cast<size_t>(place.rank / std::max(1, p.ranks_per_host));
  if (const char* node = env("SLURMD_NODENAME"); p.backend == Backend::Slurm && node) place.current_host = node;
  else if (!place.hosts.empty()) place.current_host = place.hosts[std::min(host, place.hosts.size() - 1)];
  return place;
}

std::vector<std::string> script_environment(const JobPlan& p, const RankPlace& place, const std::string& resume,
                                            const std::vector<std::pair<std::string, std::string>>& channels) {
  const int cpus = p.threads_per_rank * p.ranks_per_host;
  nlohmann::json channel_dirs = nlohmann::json::object(), channel_names = nlohmann::json::array();
  for (const auto& [name, path] : channels) {
    channel_dirs[name] = path;
    channel_names.push_back(name);
  }
  const std::string master = place.hosts.empty() ? place.current_host : place.hosts.front();
  nlohmann::json training_env = {
      {"channel_input_dirs", channel_dirs},
      {"current_host", place.current_host},
      {"hosts", place.hosts},
      {"hyperparameters", p.hyperparameters},
      {"is_master", place.current_host == master},
      {"job_name", p.name},
      {"master_hostname", master},
      {"model_dir", p.model_dir()},
      {"module_name", module_name(p.entry_point)},
      {"num_cpus", cpus},
      {"num_gpus", p.instance.gpus},
      {"output_data_dir", p.output_data_dir()},
      {"output_dir", p.output_dir()},
      {"resource_config", {{"current_host", place.current_host}, {"hosts", place.hosts}}},
      {"user_entry_point", fs::path(p.entry_point).filename().string()},
      // strata's: where checkpoints go, and the distribution a YAML config would carry.
      {"checkpoint_dir", p.local_dir},
      {"distribution", p.distribution},
  };
  std::vector<std::string> env = {
      "SM_MODEL_DIR=" + p.model_dir(),
      "SM_OUTPUT_DIR=" + p.output_dir(),
      "SM_OUTPUT_DATA_DIR=" + p.output_data_dir(),
      std::string(kCheckpointDirVariable) + "=" + p.local_dir,
      "SM_HPS=" + p.hyperparameters.dump(),
      "SM_USER_ARGS=" + nlohmann::json(p.script_arguments).dump(),
      "SM_NUM_GPUS=" + std::to_string(p.instance.gpus),  // the instance type's, as the job asked for it
      "SM_NUM_CPUS=" + std::to_string(cpus),
      "SM_HOSTS=" + nlohmann::json(place.hosts).dump(),
      "SM_CURRENT_HOST=" + place.current_host,
      "SM_MODULE_NAME=" + module_name(p.entry_point),
      "SM_USER_ENTRY_POINT=" + fs::path(p.entry_point).filename().string(),
      "SM_CHANNELS=" + channel_names.dump(),
      "SM_TRAINING_ENV=" + training_env.dump(),
      "TRAINING_JOB_NAME=" + p.name,
      "OMP_NUM_THREADS=" + std::to_string(p.threads_per_rank),
  };
  // SM_HP_<NAME>: each hyperparameter as the command line has it.
  for (size_t i = 0; i + 1 < p.script_arguments.size(); i += 2) {
    const std::string& flag = p.script_arguments[i];
    env.push_back("SM_HP_" + upper(flag.substr(flag.find_first_not_of('-'))) + "=" + p.script_arguments[i + 1]);
  }
  if (!resume.empty()) env.push_back(std::string(kResumeVariable) + "=" + resume);
  return env;
}

std::vector<std::pair<std::string, std::string>> channels_in_environment() {
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = environ; *e; ++e) {
    const std::string_view kv(*e);
    const size_t eq = kv.find('=');
    if (!kv.starts_with(kChannelPrefix) || eq == std::string_view::npos) continue;
    out.emplace_back(lower(std::string(kv.substr(kChannelPrefix.size(), eq - kChannelPrefix.size()))),
                     std::string(kv.substr(eq + 1)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> script_argv(const JobPlan& p) {
  std::vector<std::string> argv = {p.python, p.entry_point};
  argv.insert(argv.end(), p.script_arguments.begin(), p.script_arguments.end());
  return argv;
}

void exec_script(const JobPlan& p, const std::vector<std::string>& env) {
  for (const std::string& kv : env) {
    const size_t eq = kv.find('=');
    setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);  // exec keeps the mask: the script must see the stop signals
  const std::vector<std::string> argv = script_argv(p);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(nullptr);
  execvp(args[0], args.data());
  fail("strata job script-rank: cannot run ", p.python, " (the interpreter of entry_point ", p.entry_point,
       "): ", std::strerror(errno));
}

}  // namespace strata::jobs
