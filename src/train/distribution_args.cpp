#include "train/distribution_args.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "dist/pipeline_schedule.h"
#include "dist/rank_grid.h"
#include "io/files.h"
#include "util/error.h"
#include "util/nearest_name.h"
#include "util/yaml_key.h"

namespace strata {

namespace {

// SageMaker modelparallel parameters, each with the TrainingArguments field it sets. The
// PyTorch spelling pipeline_parallel_degree and the TensorFlow one, partitions, are the same
// option.
struct Parameter {
  const char* key;
  const char* field;
};
constexpr Parameter kParameters[] = {
    {"partitions", "pipeline_parallel_degree"},
    {"pipeline_parallel_degree", "pipeline_parallel_degree"},
    {"tensor_parallel_degree", "tensor_parallel_degree"},
    {"microbatches", "microbatches"},
    {"pipeline", "pipeline"},
    {"placement_strategy", "placement_strategy"},
    {"ddp", "ddp"},
    {"shard_optimizer_state", "shard_optimizer_state"},
    {"optimize", "optimize"},
    {"auto_partition", "auto_partition"},
    {"default_partition", "default_partition"},
    {"pipeline_partition", "pipeline_partition"},  // strata's: blocks per stage, e.g. [4, 4]
    {"offload_activations", "offload_activations"},
    {"activation_checkpointing", "gradient_checkpointing"},  // true, false, or every k-th layer
    {"fp16", "fp16"},  // mixed precision (docs/mixed_precision.md)
    {"bf16", "bf16"},
};

// Options of SageMaker's library that strata knows by name but does not implement: a clear
// "not supported" rather than a guess at a typo.
constexpr const char* kUnsupported[] = {
    "memory_weight", "active_microbatches", "deterministic_server", "fp16_params",
    "prescaled_batch", "skip_tracing", "contiguous", "horovod", "ddp_port", "ddp_dist_backend",
    "sharded_data_parallel_degree", "delayed_parameter_initialization", "activation_loading_horizon",
    "tensor_parallel_seed", "predefined_hooks", "checkpoint_attentions"};

// "job.yaml line 7": where a key is, for errors (`src` names the file).
std::string line_of(const YAML::Node& key_node, const std::string& src) {
  return cat(src, " line ", key_node.Mark().line + 1);
}

[[noreturn]] void unknown(const std::string& path, const std::string& key, const std::vector<std::string>& known,
                          const std::string& where) {
  std::string list;
  for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
  fail(where, ": unknown key ", path, ".", key, did_you_mean(key, known), " (expected one of ", list, ")");
}

void require_map(const YAML::Node& n, const std::string& path, const std::string& example, const std::string& where) {
  if (!n.IsMap()) fail(where, ": ", path, " must be a mapping, e.g. ", example);
}

bool read_bool(const YAML::Node& v, const std::string& path, const std::string& where) {
  bool x = false;
  if (!v.IsScalar() || !YAML::convert<bool>::decode(v, x)) fail(where, ": ", path, " expects true or false");
  return x;
}

int read_int(const YAML::Node& v, const std::string& path, const std::string& where) {
  long long x = 0;
  if (!v.IsScalar() || !YAML::convert<long long>::decode(v, x) || x < INT32_MIN || x > INT32_MAX)
    fail(where, ": ", path, " expects an integer");
  return static_cast<int>(x);
}

// SageMaker's activation_checkpointing: true / false, or k: checkpoint every k-th layer.
void read_activation_checkpointing(TrainingArguments& a, const YAML::Node& v, const std::string& path,
                                   const std::string& where) {
  bool on = false;
  long long every = 0;
  if (v.IsScalar() && YAML::convert<bool>::decode(v, on)) {
    a.gradient_checkpointing = on;
  } else if (v.IsScalar() && YAML::convert<long long>::decode(v, every) && every >= 0 && every <= INT32_MAX) {
    a.gradient_checkpointing = every > 0;
    if (every > 0) a.gradient_checkpointing_every = static_cast<int>(every);
  } else {
    fail(where, ": ", path, " expects true, false, or k >= 1 to checkpoint every k-th layer");
  }
}

void read_parameters(TrainingArguments& a, const YAML::Node& params, const std::string& path,
                     const std::string& where) {
  require_map(params, path, "{partitions: 2, microbatches: 4}", where);
  std::vector<std::string> known;
  for (const Parameter& p : kParameters) known.emplace_back(p.key);
  std::string degree_key;  // partitions or pipeline_parallel_degree, whichever came first
  for (const auto& kv : params) {
    const std::string key = yaml_key(kv.first, where), at = line_of(kv.first, where), full = path + "." + key;
    if (std::find(std::begin(kUnsupported), std::end(kUnsupported), key) != std::end(kUnsupported))
      fail(at, ": ", full, " is an option of SageMaker's model-parallel library that strata does not implement "
           "(docs/parallelism.md lists the ones it does)");
    const auto it = std::find_if(std::begin(kParameters), std::end(kParameters),
                                 [&](const Parameter& p) { return key == p.key; });
    if (it == std::end(kParameters)) unknown(path, key, known, at);
    if (key == "activation_checkpointing") {
      read_activation_checkpointing(a, kv.second, full, at);
      continue;
    }
    if (std::string(it->field) == "pipeline_parallel_degree") {
      const int v = read_int(kv.second, full, at);
      if (!degree_key.empty() && v != a.pipeline_parallel_degree)
        fail(at, ": ", full, " is ", v, " but ", degree_key, " is ", a.pipeline_parallel_degree,
             ": they are the same option (the number of pipeline stages); set one");
      degree_key = key;
    }
    set_training_argument(a, it->field, kv.second, cat(at, " (", full, ")"));
  }
}

void read_modelparallel(TrainingArguments& a, const YAML::Node& mp, const std::string& path, const std::string& where,
                        bool& enabled) {
  require_map(mp, path, "{enabled: true, parameters: {partitions: 2}}", where);
  bool has_enabled = false;
  TrainingArguments staged = a;  // the parameters apply only when enabled
  for (const auto& kv : mp) {
    const std::string key = yaml_key(kv.first, where), at = line_of(kv.first, where);
    if (key == "enabled") {
      enabled = read_bool(kv.second, path + ".enabled", at);
      has_enabled = true;
    } else if (key == "parameters") {
      read_parameters(staged, kv.second, path + ".parameters", where);
    } else {
      unknown(path, key, {"enabled", "parameters"}, at);
    }
  }
  if (!has_enabled) fail(where, ": ", path, " needs enabled: true (or false), as SageMaker's does");
  if (enabled) a = staged;
}

void read_mpi(TrainingArguments& a, const YAML::Node& mpi, const std::string& where, bool& enabled) {
  require_map(mpi, "distribution.mpi", "{enabled: true, processes_per_host: 8}", where);
  for (const auto& kv : mpi) {
    const std::string key = yaml_key(kv.first, where), at = line_of(kv.first, where);
    if (key == "enabled") {
      enabled = read_bool(kv.second, "distribution.mpi.enabled", at);
    } else if (key == "processes_per_host") {
      a.processes_per_host = read_int(kv.second, "distribution.mpi.processes_per_host", at);
      if (a.processes_per_host < 1) fail(at, ": distribution.mpi.processes_per_host must be at least 1");
    } else if (key == "custom_mpi_options") {
      fail(at, ": distribution.mpi.custom_mpi_options: strata does not start the processes itself; give MPI "
           "options to mpirun, or to strata launch after --mpi-args");
    } else {
      unknown("distribution.mpi", key, {"enabled", "processes_per_host", "custom_mpi_options"}, at);
    }
  }
}

void read_dataparallel(TrainingArguments& a, const YAML::Node& dp, const std::string& path, const std::string& where) {
  require_map(dp, path, "{enabled: true}", where);
  for (const auto& kv : dp) {
    const std::string key = yaml_key(kv.first, where), at = line_of(kv.first, where);
    if (key != "enabled") unknown(path, key, {"enabled"}, at);
    a.dataparallel_enabled = read_bool(kv.second, path + ".enabled", at);
  }
}

}  // namespace

void read_distribution(TrainingArguments& a, const YAML::Node& d, const std::string& where) {
  require_map(d, "distribution", "{smdistributed: {modelparallel: {enabled: true, parameters: {partitions: 2}}}}",
              where);
  bool mp_enabled = false, mpi_enabled = true, mpi_given = false;
  // smdistributed.X and (as the data-parallel-only form always allowed) X at the top level.
  // False when `key` names no library.
  auto read_library = [&](const std::string& key, const YAML::Node& v, const std::string& path) {
    if (key == "modelparallel") {
      read_modelparallel(a, v, path, where, mp_enabled);
    } else if (key == "dataparallel") {
      read_dataparallel(a, v, path, where);
    } else {
      return false;
    }
    return true;
  };
  for (const auto& kv : d) {
    const std::string key = yaml_key(kv.first, where), at = line_of(kv.first, where);
    if (read_library(key, kv.second, "distribution." + key)) continue;
    if (key == "smdistributed") {
      require_map(kv.second, "distribution.smdistributed", "{modelparallel: {enabled: true}}", at);
      for (const auto& lib : kv.second) {
        const std::string name = yaml_key(lib.first, where);
        if (!read_library(name, lib.second, "distribution.smdistributed." + name))
          unknown("distribution.smdistributed", name, {"modelparallel", "dataparallel"}, line_of(lib.first, where));
      }
    } else if (key == "mpi") {
      read_mpi(a, kv.second, where, mpi_enabled);
      mpi_given = true;
    } else {
      unknown("distribution", key, {"smdistributed", "mpi", "dataparallel", "modelparallel"}, at);
    }
  }
  // SageMaker refuses these combinations too.
  if (mp_enabled && a.dataparallel_enabled)
    fail(where, ": distribution enables both dataparallel and modelparallel; model parallelism does its own data "
         "parallelism across model replicas (ddp: true): enable modelparallel only");
  if (mp_enabled && mpi_given && !mpi_enabled)
    fail(where, ": distribution.mpi.enabled is false, but modelparallel runs its processes through MPI: set it true");
}

namespace {

// HF's DeepSpeed integration lets a config say "auto": the TrainingArguments value stands.
bool is_auto(const YAML::Node& v) { return v.IsScalar() && v.Scalar() == "auto"; }

// deepspeed.fp16 / deepspeed.bf16 (DeepSpeed's names; "bfloat16" is bf16's older one): the
// mixed-precision flags, and for fp16 the loss scaler's initial_scale_power (2^p, DeepSpeed's
// default 16 = GradScaler's 2^16) and loss_scale_window (growth interval). DeepSpeed's
// hysteresis, consecutive_hysteresis and min_loss_scale are read and named in the run's
// warning: strata backs off as GradScaler does (at the first overflow, down to 2^-24).
void read_deepspeed_precision(TrainingArguments& a, const std::string& block, const YAML::Node& node,
                              const std::string& at) {
  const bool fp16 = block == "fp16";
  require_map(node, "deepspeed." + block, "{enabled: true}", at);
  std::vector<std::string> known = {"enabled"};
  if (fp16) known.insert(known.end(), {"loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis",
                                      "consecutive_hysteresis", "min_loss_scale", "auto_cast"});
  for (const auto& kv : node) {
    const std::string key = yaml_key(kv.first, at), key_at = line_of(kv.first, at), path = "deepspeed." + block + "." + key;
    if (std::find(known.begin(), known.end(), key) == known.end()) unknown("deepspeed." + block, key, known, key_at);
    if (is_auto(kv.second)) continue;
    if (key == "enabled") {
      (fp16 ? a.fp16 : a.bf16) = read_bool(kv.second, path, key_at);
    } else if (key == "loss_scale") {
      if (read_int(kv.second, path, key_at) != 0)
        fail(key_at, ": ", path, ": a static loss scale is not implemented; set 0 (dynamic loss scaling, GradScaler's)");
    } else if (key == "initial_scale_power") {
      const int p = read_int(kv.second, path, key_at);
      if (p < -24 || p > 100) fail(key_at, ": ", path, " expects an exponent in [-24, 100], got ", p);
      a.fp16_init_scale = std::ldexp(1.0, p);
    } else if (key == "loss_scale_window") {
      a.fp16_growth_interval = read_int(kv.second, path, key_at);
    } else if (key == "auto_cast") {
      if (read_bool(kv.second, path, key_at))
        fail(key_at, ": ", path, ": casting the inputs to fp16 is not implemented (strata's inputs are token ids)");
    } else {
      a.ignored_options.push_back(path);
    }
  }
}

}  // namespace

void read_deepspeed(TrainingArguments& a, const YAML::Node& node, const std::string& where) {
  YAML::Node ds = node;
  std::string at = where;
  if (node.IsScalar()) {  // a DeepSpeed JSON file, as HF's --deepspeed ds_config.json (JSON is YAML)
    at = node.as<std::string>();
    try {
      ds = YAML::Load(io::read_file(at));
    } catch (const YAML::Exception& e) {
      fail(at, ": invalid JSON at line ", e.mark.line + 1, ", column ", e.mark.column + 1, ": ", e.msg);
    }
  }
  require_map(ds, "deepspeed", "{zero_optimization: {stage: 2}}, or the path of a DeepSpeed JSON config", at);
  for (const auto& kv : ds) {
    const std::string key = yaml_key(kv.first, at), key_at = line_of(kv.first, at);
    if (key == "fp16" || key == "bf16" || key == "bfloat16") {
      read_deepspeed_precision(a, key == "fp16" ? "fp16" : "bf16", kv.second, at);
      continue;
    }
    if (key != "zero_optimization")
      fail(key_at, ": deepspeed.", key, did_you_mean(key, {"zero_optimization", "fp16", "bf16"}),
           ": strata reads only zero_optimization.stage, fp16 and bf16 from a DeepSpeed config; set batch sizes, "
           "clipping, the optimizer and its schedule with the TrainingArguments options");
    require_map(kv.second, "deepspeed.zero_optimization", "{stage: 2}", key_at);
    for (const auto& z : kv.second) {
      const std::string zkey = yaml_key(z.first, at), z_at = line_of(z.first, at);
      if (zkey != "stage")
        fail(z_at, ": deepspeed.zero_optimization.", zkey, did_you_mean(zkey, {"stage"}),
             ": strata reads only the stage (its buckets are ddp_bucket_cap_mb, and reduction always overlaps backward)");
      a.zero_stage = read_int(z.second, "deepspeed.zero_optimization.stage", z_at);
    }
  }
}

void validate_parallel_arguments(const TrainingArguments& a, const std::string& src) {
  auto at_least_one = [&](int v, const char* name) {
    if (v < 1) fail(src, ": ", name, " must be at least 1, got ", v);
  };
  at_least_one(a.pipeline_parallel_degree, "pipeline_parallel_degree (partitions)");
  at_least_one(a.tensor_parallel_degree, "tensor_parallel_degree");
  at_least_one(a.microbatches, "microbatches");
  at_least_one(a.gradient_checkpointing_every, "gradient_checkpointing_every");
  if (a.optimize != "memory" && a.optimize != "speed")
    fail(src, ": optimize is '", a.optimize, "'; expected memory or speed");
  try {
    dist::parse_pipeline_kind(a.pipeline);
    dist::placement_order(a.placement_strategy);
  } catch (const Error& e) {
    fail(src, ": ", e.what());
  }
  if (!a.pipeline_partition.empty()) {
    if (static_cast<int>(a.pipeline_partition.size()) != a.pipeline_parallel_degree)
      fail(src, ": pipeline_partition lists ", a.pipeline_partition.size(), " stages but pipeline_parallel_degree "
           "(partitions) is ", a.pipeline_parallel_degree, ": give one block count per stage");
    for (int n : a.pipeline_partition)
      if (n < 1) fail(src, ": pipeline_partition has a stage of ", n, " blocks; every stage needs at least one");
  }
  if (a.zero_stage == 3)
    fail(src, ": ZeRO stage 3 (parameter sharding) is not implemented; stage 1 shards the optimizer state, stage 2 "
         "also the gradients");
  if (a.zero_stage < 0 || a.zero_stage > 3) fail(src, ": zero_stage must be 0, 1 or 2, got ", a.zero_stage);
  if (a.per_device_train_batch_size % a.microbatches != 0)
    fail(src, ": microbatches (", a.microbatches, ") must divide per_device_train_batch_size (",
         a.per_device_train_batch_size, "): every micro-batch has the same number of rows");
  if (!a.auto_partition && (a.default_partition < 0 || a.default_partition >= a.pipeline_parallel_degree))
    fail(src, ": default_partition ", a.default_partition, " is not a pipeline stage (0 .. ",
         a.pipeline_parallel_degree - 1, ")");
  if (a.replica_threads < 0) fail(src, ": replica_threads must be >= 0 (0: auto), got ", a.replica_threads);
  if (a.replica_threads > 1 && (a.pipeline_parallel_degree > 1 || a.tensor_parallel_degree > 1 || a.microbatches > 1))
    fail(src, ": replica_threads (", a.replica_threads, ") cuts each batch into parts trained at once by one "
         "process; it cannot be combined with pipeline_parallel_degree (", a.pipeline_parallel_degree,
         "), tensor_parallel_degree (", a.tensor_parallel_degree, ") or microbatches (", a.microbatches, ") above 1");
  if (a.processes_per_host < 0) fail(src, ": processes_per_host must be >= 0 (0: as the launcher started them)");
}

}  // namespace strata
