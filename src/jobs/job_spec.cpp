#include "jobs/job_spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>

#include "io/files.h"
#include "train/training_args.h"
#include "util/error.h"
#include "util/nearest_name.h"
#include "util/yaml_key.h"

namespace strata::jobs {

namespace {

struct Reader {
  const std::string& source;
  std::string where(const YAML::Node& key) const { return cat(source, " line ", key.Mark().line + 1); }
};

std::string scalar_text(const YAML::Node& v, const std::string& where, const char* what) {
  if (!v.IsScalar()) fail(where, ": ", what, " expects a single value");
  return v.Scalar();
}

double seconds(const YAML::Node& v, const std::string& where, const char* key) {
  double x;
  if (!v.IsScalar() || !YAML::convert<double>::decode(v, x) || !(x >= 0))
    fail(where, ": ", key, " expects a number of seconds >= 0");
  return x;
}

// 30 (seconds into the attempt) or {at_step: 200} (after that step).
SimulatedInterruption interruption(const YAML::Node& v, const std::string& where) {
  SimulatedInterruption i;
  if (v.IsMap()) {
    int64_t step = -1;
    if (v.size() != 1 || !v["at_step"] || !v["at_step"].IsScalar() ||
        !YAML::convert<int64_t>::decode(v["at_step"], step) || step < 1)
      fail(where, ": simulate_interruptions expects seconds (a number >= 0) or {at_step: N} with a step N >= 1");
    i.step = step;
  } else {
    i.seconds = seconds(v, where, "simulate_interruptions");
  }
  return i;
}

std::string emit(const YAML::Node& n) { return YAML::Dump(n) + "\n"; }

bool ends_with_any(const std::string& s, std::initializer_list<const char*> suffixes) {
  return std::any_of(suffixes.begin(), suffixes.end(), [&](const char* x) { return s.ends_with(x); });
}

// The ranks run a strata train configuration or a Python script: exactly one of the two, and
// the script must be there now, not when the first rank starts.
void check_what_runs(const JobSpec& s, std::map<std::string, int>& seen_line) {
  auto line = [&](const char* key) { return cat(s.source, " line ", seen_line[key]); };
  if (seen_line.count("python") && !s.runs_script())
    fail(line("python"), ": python is the interpreter of entry_point, and this job has none (its ranks run strata "
         "train on training_config)");
  if (!s.runs_script()) {
    if (s.training_config_yaml.empty())
      fail(s.source, ": training_config or entry_point is required (a strata train YAML or its mapping; or a Python "
           "script)");
    return;
  }
  if (seen_line.count("training_config"))
    fail(line("entry_point"), ": entry_point (a Python script) and training_config (a strata train configuration) "
         "are alternatives; keep one");
  if (ends_with_any(s.entry_point, {".yaml", ".yml", ".json"}))
    fail(line("entry_point"), ": entry_point runs a Python script, and '", s.entry_point,
         "' looks like a strata train configuration: give it as training_config");
  if (!std::filesystem::exists(s.entry_point))
    fail(line("entry_point"), ": entry_point ", s.entry_point, " does not exist (relative paths are relative to the "
         "directory strata job run runs in)");
  if (!std::filesystem::is_regular_file(s.entry_point))
    fail(line("entry_point"), ": entry_point ", s.entry_point, " is not a file (a Python script, e.g. train.py)");
  if (s.python.empty()) fail(line("python"), ": python must name an interpreter, e.g. python3 or /usr/bin/python3");
}

// A scalar as YAML text that reads back the same: a quoted scalar stays quoted, so that '3'
// stays a string (YAML::Dump would write it plain).
std::string scalar_yaml(const YAML::Node& v) {
  if (v.Tag() != "!") return YAML::Dump(v);
  YAML::Emitter out;
  out << YAML::DoubleQuoted << v.Scalar();
  return out.c_str();
}

// name: scalar pairs. as_yaml: keep each value as YAML text (quoted where needed), so that a
// hyperparameter "a: b" stays one string when it is parsed again.
NameValues name_values(const YAML::Node& v, const std::string& source, const std::string& where, const char* key,
                       bool as_yaml) {
  if (v.IsNull()) return {};
  if (!v.IsMap()) fail(where, ": ", key, " expects a mapping of name: value");
  NameValues out;
  for (const auto& kv : v) {
    const std::string name = yaml_key(kv.first, source);
    const std::string text = scalar_text(kv.second, cat(where, ": ", key, ".", name), "the value");
    out.emplace_back(name, as_yaml ? scalar_yaml(kv.second) : text);
  }
  return out;
}

bool valid_env_name(const std::string& n) {
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
  return std::all_of(n.begin(), n.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

YAML::Node load_yaml(const std::string& text, const std::string& source) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail(source, ": invalid YAML at line ", e.mark.line + 1, ", column ", e.mark.column + 1, ": ", e.msg);
  }
}

// A plain scalar's value under YAML 1.2's core schema.
nlohmann::json typed_scalar(const std::string& text) {
  static const std::regex null_re("~|null|Null|NULL|"), true_re("true|True|TRUE"), false_re("false|False|FALSE"),
      int_re("[-+]?[0-9]+"), float_re(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (std::regex_match(text, null_re)) return nullptr;
  if (std::regex_match(text, true_re)) return true;
  if (std::regex_match(text, false_re)) return false;
  if (std::regex_match(text, int_re)) {
    try {
      return std::stoll(text);
    } catch (const std::out_of_range&) {
      return std::stod(text);  // beyond 64 bits: the nearest double
    }
  }
  if (std::regex_match(text, float_re)) return std::stod(text);
  return text;
}

nlohmann::json node_json(const YAML::Node& n, const std::string& source) {
  if (n.IsMap()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& kv : n) out[yaml_key(kv.first, source)] = node_json(kv.second, source);
    return out;
  }
  if (n.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : n) out.push_back(node_json(v, source));
    return out;
  }
  if (!n.IsDefined() || n.IsNull()) return nullptr;
  return n.Tag() == "?" ? typed_scalar(n.Scalar()) : nlohmann::json(n.Scalar());  // "!": quoted, a string
}

}  // namespace

nlohmann::json yaml_to_json(const std::string& yaml_text, const std::string& source) {
  return node_json(load_yaml(yaml_text, source), source);
}

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::Local: return "local";
    case Backend::Hostfile: return "hostfile";
    case Backend::Slurm: return "slurm";
  }
  return "?";
}

JobSpec parse_job_spec(const std::string& text, const std::string& source) {
  const YAML::Node root = load_yaml(text, source);
  if (!root.IsMap()) fail(source, ": expected a YAML mapping of job options (docs/jobs.md)");
  JobSpec s;
  s.source = source;
  const Reader r{source};
  std::map<std::string, int> seen_line;
  using Handler = std::function<void(const YAML::Node& v, const std::string& where)>;
  auto str = [](std::string& dst) -> Handler {
    return [&dst](const YAML::Node& v, const std::string& w) { dst = scalar_text(v, w, "this option"); };
  };
  auto secs = [](double& dst, const char* key) -> Handler {
    return [&dst, key](const YAML::Node& v, const std::string& w) { dst = seconds(v, w, key); };
  };
  const std::vector<std::pair<std::string, Handler>> handlers = {
      {"base_job_name", str(s.base_job_name)},
      {"instance_type", str(s.instance_type)},
      {"instance_count",
       [&](const YAML::Node& v, const std::string& w) {
         if (!v.IsScalar() || !YAML::convert<int>::decode(v, s.instance_count) || s.instance_count < 1)
           fail(w, ": instance_count expects an integer >= 1");
       }},
      {"hyperparameters", [&](const YAML::Node& v, const std::string& w) { s.hyperparameters = name_values(v, source, w, "hyperparameters", true); }},
      {"distribution",
       [&](const YAML::Node& v, const std::string& w) {
         if (!v.IsMap()) fail(w, ": distribution expects a mapping, e.g. {dataparallel: {enabled: true}}");
         s.distribution = emit(v);
       }},
      {"checkpoint_uri", str(s.checkpoint_uri)},
      {"checkpoint_local_path", str(s.checkpoint_local_path)},
      {"output_path", str(s.output_path)},
      {"use_spot_instances",
       [&](const YAML::Node& v, const std::string& w) {
         if (!v.IsScalar() || !YAML::convert<bool>::decode(v, s.use_spot_instances))
           fail(w, ": use_spot_instances expects true or false");
       }},
      {"max_run", secs(s.max_run, "max_run")},
      {"max_wait", secs(s.max_wait, "max_wait")},
      {"environment", [&](const YAML::Node& v, const std::string& w) { s.environment = name_values(v, source, w, "environment", false); }},
      {"training_config",
       [&](const YAML::Node& v, const std::string& w) {
         if (v.IsMap()) {
           s.training_config_source = cat(source, " training_config");
           s.training_config_yaml = emit(v);
         } else {
           s.training_config_source = scalar_text(v, w, "training_config (a path, or the mapping itself)");
           s.training_config_yaml = io::read_file(s.training_config_source);
         }
       }},
      {"backend",
       [&](const YAML::Node& v, const std::string& w) {
         const std::string b = scalar_text(v, w, "backend");
         if (b == "local") s.backend = Backend::Local;
         else if (b == "hostfile") s.backend = Backend::Hostfile;
         else if (b == "slurm") s.backend = Backend::Slurm;
         else fail(w, ": backend is '", b, "'; expected local, hostfile or slurm");
       }},
      {"hostfile", str(s.hostfile)},
      {"slurm_partition", str(s.slurm_partition)},
      {"instance_catalog", str(s.instance_catalog)},
      {"termination_grace_period", secs(s.termination_grace_period, "termination_grace_period")},
      {"simulate_interruptions",
       [&](const YAML::Node& v, const std::string& w) {
         if (!v.IsSequence())
           fail(w, ": simulate_interruptions expects a list of seconds or steps, e.g. [30, 75] or [{at_step: 200}]");
         for (const auto& t : v) s.simulate_interruptions.push_back(interruption(t, w));
       }},
      {"simulate_capacity_wait", secs(s.simulate_capacity_wait, "simulate_capacity_wait")},
      {"entry_point", str(s.entry_point)},
      {"python", str(s.python)},
  };
  std::vector<std::string> names;
  for (const auto& h : handlers) names.push_back(h.first);
  names.push_back("checkpoint_s3_uri");
  for (const auto& kv : root) {
    std::string key = yaml_key(kv.first, source);
    const std::string where = r.where(kv.first);
    if (key == "checkpoint_s3_uri") key = "checkpoint_uri";  // the Estimator's spelling
    const auto h = std::find_if(handlers.begin(), handlers.end(), [&](const auto& e) { return e.first == key; });
    if (h == handlers.end())
      fail(where, ": unknown job option '", kv.first.Scalar(), "'", did_you_mean(kv.first.Scalar(), names),
           " (docs/jobs.md lists them)");
    if (seen_line.count(key))
      fail(where, ": ", key, " is already set at line ", seen_line[key],
           key == "checkpoint_uri" ? " (checkpoint_s3_uri is another name for it)" : "");
    seen_line[key] = kv.first.Mark().line + 1;
    h->second(kv.second, where);
  }
  auto line = [&](const char* key) { return cat(source, " line ", seen_line[key]); };
  if (s.instance_type.empty()) fail(source, ": instance_type is required (a name from the instance catalog, e.g. local.c2)");
  check_what_runs(s, seen_line);
  if (!(s.max_run > 0)) fail(line("max_run"), ": max_run must be positive");
  if (seen_line.count("max_wait")) {
    if (!s.use_spot_instances)
      fail(line("max_wait"), ": max_wait bounds the wait for spot capacity; it needs use_spot_instances: true");
    if (s.max_wait < s.max_run)
      fail(line("max_wait"), ": max_wait (", s.max_wait, " s) must be at least max_run (", s.max_run,
           " s): it bounds training plus waiting");
  }
  if (!s.simulate_interruptions.empty() && !s.use_spot_instances)
    fail(line("simulate_interruptions"), ": only spot capacity is interrupted; set use_spot_instances: true");
  if (seen_line.count("simulate_capacity_wait") && !s.use_spot_instances)
    fail(line("simulate_capacity_wait"), ": only spot capacity is waited for; set use_spot_instances: true");
  if (!(s.termination_grace_period > 0)) fail(line("termination_grace_period"), ": termination_grace_period must be positive");
  if (s.backend == Backend::Hostfile && s.hostfile.empty())
    fail(source, ": backend hostfile needs hostfile: FILE (OpenMPI's format, \"host slots=N\" per line)");
  if (s.backend != Backend::Hostfile && !s.hostfile.empty())
    fail(line("hostfile"), ": hostfile is used by backend: hostfile only (this job's backend is ", backend_name(s.backend), ")");
  if (s.backend != Backend::Slurm && !s.slurm_partition.empty())
    fail(line("slurm_partition"), ": slurm_partition is used by backend: slurm only");
  for (const auto& [name, value] : s.environment)
    if (!valid_env_name(name)) fail(line("environment"), ": environment variable name '", name, "' is not a valid name");
  if (s.output_path.empty()) fail(line("output_path"), ": output_path must not be empty");
  return s;
}

JobSpec load_job_spec(const std::string& path) { return parse_job_spec(io::read_file(path), path); }

std::string effective_training_config(const JobSpec& spec, const NameValues& settings) {
  YAML::Node cfg = load_yaml(spec.training_config_yaml, spec.training_config_source);
  if (!cfg.IsMap()) fail(spec.training_config_source, ": expected a YAML mapping of option: value");
  if (!spec.distribution.empty()) {
    if (cfg["distribution"])
      fail(spec.source, ": distribution is set both here and in ", spec.training_config_source, "; keep one");
    cfg["distribution"] = YAML::Load(spec.distribution);
  }
  // The hyperparameters are checked as overrides first, so an error names them, not a line
  // of the merged text.
  std::vector<std::string> overrides;
  for (const auto& [k, v] : spec.hyperparameters) overrides.push_back(k + "=" + v);
  parse_training_arguments(emit(cfg), spec.training_config_source, overrides, spec.source + " hyperparameters:");
  for (const auto& [k, v] : spec.hyperparameters) cfg[k] = YAML::Load(v);
  for (const auto& [k, v] : settings) cfg[k] = YAML::Load(v);
  const std::string text = emit(cfg);
  parse_training_arguments(text, spec.training_config_source + " (as the job runs it)");
  return text;
}

}  // namespace strata::jobs
