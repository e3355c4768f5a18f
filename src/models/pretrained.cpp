#include "models/pretrained.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "io/files.h"
#include "io/python_json.h"
#include "io/safetensors.h"
#include "kernels/ops.h"
#include "models/registry.h"
#include "util/console.h"
#include "util/error.h"
#include "util/shape_str.h"

namespace strata {

namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

// Non-persistent buffers that old checkpoints may carry; HF ignores them on load.
bool is_ignored_buffer(const std::string& name) { return name.ends_with("position_ids"); }

// Maps each checkpoint name to the name the model uses, the way from_pretrained does:
// a task model reading a base checkpoint adds the base prefix, a base model reading a task
// checkpoint strips it.
std::map<std::string, std::string> map_checkpoint_names(const std::vector<std::string>& file_names,
                                                        const ModelConfig& cfg) {
  const std::string prefix = cfg.base_prefix();
  bool file_has_prefix = false;
  for (const auto& n : file_names) file_has_prefix |= starts_with(n, prefix);
  std::map<std::string, std::string> out;
  for (const auto& n : file_names) {
    // Checkpoints from TensorFlow-era BERTs name LayerNorm parameters gamma and beta; HF renames
    // them on load.
    std::string m = n;
    if (m.ends_with(".gamma")) m = m.substr(0, m.size() - 6) + ".weight";
    if (m.ends_with(".beta")) m = m.substr(0, m.size() - 5) + ".bias";
    if (cfg.task != Task::Base && !file_has_prefix) m = prefix + m;
    if (cfg.task == Task::Base && starts_with(m, prefix)) m = m.substr(prefix.size());
    out[m] = n;
  }
  return out;
}

// Fills every parameter of `model` found in DIR's safetensors; the rest are initialised and
// listed as missing. Entries `keep` rejects are checked and reported all the same, but neither
// written nor initialised.
template <typename T>
LoadReport fill_from_checkpoint(Model<T>& model, const std::string& dir, uint64_t init_seed, const EntryFilter& keep) {
  const ModelConfig& cfg = model.config();
  const io::SafetensorsSet files(dir);
  const auto by_model_name = map_checkpoint_names(files.names(), cfg);
  std::set<std::string> used;
  LoadReport rep;

  auto lookup = [&](const std::string& name) -> const io::TensorView* {
    auto it = by_model_name.find(name);
    if (it != by_model_name.end()) {
      used.insert(it->second);
      return files.find(it->second);
    }
    return nullptr;
  };

  const auto& entries = model.table().entries();
  for (size_t i = 0; i < entries.size(); ++i) {
    const ParamEntry& e = entries[i];
    const bool kept = !keep || keep(i);
    const io::TensorView* t = lookup(e.name);
    if (!t) {  // HF may have kept the tied twin's name instead
      for (const auto& [alias, target] : model.tied_aliases())
        if (target == e.name && (t = lookup(alias))) break;
    }
    if (!t) {
      rep.missing.push_back(e.name);
      if (kept) model.init_parameter(e.name, init_seed);
      continue;
    }
    if (t->dtype != DType::F32 && t->dtype != DType::F64 && t->dtype != DType::F16 && t->dtype != DType::BF16)
      fail(dir, ": tensor '", t->name, "' has dtype ", dtype_name(t->dtype),
           "; model weights must be F32, F16, BF16 or F64");
    if (t->shape != e.global_shape)
      fail(dir, ": tensor '", t->name, "' has shape ", shape_str(t->shape), " but config.json implies ",
           shape_str(e.global_shape), " for ", e.name);
    if (!kept) continue;
    StagedWrite<T> param(model.params(), e.offset, e.numel);
    if (e.replicated() || !model.tensor_split().split()) {
      io::convert_to<T>(*t, param.data());
    } else {  // a tensor-parallel rank keeps its slice of the HF tensor
      std::vector<T> whole(global_numel(e));
      io::convert_to<T>(*t, whole.data());
      take_slice(e, model.tensor_split(), whole.data(), param.data());
    }
    param.upload();
  }
  for (const auto& [alias, target] : model.tied_aliases()) {
    auto it = by_model_name.find(alias);
    if (it != by_model_name.end()) used.insert(it->second);
  }
  const auto& ignored = model.ignored_on_load();
  for (const auto& n : files.names())
    if (!used.count(n) && !is_ignored_buffer(n) && std::find(ignored.begin(), ignored.end(), n) == ignored.end())
      rep.unexpected.push_back(n);
  return rep;
}

}  // namespace

template <typename T>
std::unique_ptr<Model<T>> load_pretrained(const ModelConfig& cfg, const std::string& dir, LoadReport* report,
                                                 uint64_t init_seed, const EntryFilter& keep) {
  auto model = make_model<T>(cfg);
  LoadReport rep = fill_from_checkpoint(*model, dir, init_seed, keep);
  if (report) *report = std::move(rep);
  return model;
}

template <typename T>
std::unique_ptr<Model<T>> load_pretrained(const std::string& dir, LoadReport* report,
                                                 const Task* task_override, uint64_t init_seed) {
  return load_pretrained<T>(load_model_config(dir, task_override), dir, report, init_seed);
}

template <typename T>
void load_weights(Model<T>& model, const std::string& dir, const EntryFilter& keep) {
  const LoadReport rep = fill_from_checkpoint(model, dir, 0, keep);
  if (!rep.missing.empty())
    fail(dir, ": checkpoint from another model: it has no tensor '", rep.missing.front(), "' (", rep.missing.size(),
         " missing)");
  if (!rep.unexpected.empty())
    fail(dir, ": checkpoint from another model: it has tensor '", rep.unexpected.front(), "' this ",
         model.config().architecture(), " does not (", rep.unexpected.size(), " unexpected)");
}

template <typename T>
void save_pretrained(const Model<T>& model, const std::string& dir, uint64_t max_shard_bytes) {
  STRATA_CHECK(!model.tensor_split().split(), "save_pretrained writes a whole model; a tensor-parallel rank's "
               "slices are gathered first (train/tensor_parallel.h)");
  std::filesystem::create_directories(dir);
  std::vector<io::TensorToWrite> tensors;
  // fp64 models are saved as fp32, as HF models are; a model on a GPU is read through one host
  // copy of its parameters.
  const StagedRead<T> params(model.params(), 0, model.params().size());
  std::vector<Buffer<float>> converted;
  converted.reserve(model.table().entries().size());
  for (const ParamEntry& e : model.table().entries()) {
    const T* src = params.data() + e.offset;
    const float* data;
    if constexpr (std::is_same_v<T, float>) {
      data = src;
    } else {
      converted.emplace_back(e.numel, kernels::Device::cpu());
      kernels::cast(src, converted.back().data(), e.numel);
      data = converted.back().data();
    }
    tensors.push_back({e.name, DType::F32, e.shape, data});
  }
  nlohmann::json cfg = model.config().to_json();
  cfg["torch_dtype"] = "float32";
  io::write_model_weights(dir, tensors, {{"format", "pt"}}, max_shard_bytes);
  io::write_file_atomic((std::filesystem::path(dir) / "config.json").string(), io::python_json(cfg) + "\n");
}

void print_load_report(const LoadReport& r, const std::string& dir) {
  if (!r.missing.empty()) {
    std::string names;
    for (const auto& n : r.missing) names += " " + n;
    console_warning(cat(dir, ": ", r.missing.size(), " weight(s) not in the checkpoint were newly initialised:", names,
                        "\n  You should probably train this model on a down-stream task before using it."));
  }
  if (!r.unexpected.empty()) {
    std::string names;
    for (const auto& n : r.unexpected) names += " " + n;
    console_warning(cat(dir, ": ", r.unexpected.size(), " checkpoint weight(s) were not used:", names));
  }
}

template std::unique_ptr<Model<float>> load_pretrained<float>(const std::string&, LoadReport*, const Task*,
                                                                     uint64_t);
template std::unique_ptr<Model<double>> load_pretrained<double>(const std::string&, LoadReport*, const Task*,
                                                                       uint64_t);
template std::unique_ptr<Model<float>> load_pretrained<float>(const ModelConfig&, const std::string&,
                                                                     LoadReport*, uint64_t, const EntryFilter&);
template std::unique_ptr<Model<double>> load_pretrained<double>(const ModelConfig&, const std::string&,
                                                                       LoadReport*, uint64_t, const EntryFilter&);
template void load_weights<float>(Model<float>&, const std::string&, const EntryFilter&);
template void load_weights<double>(Model<double>&, const std::string&, const EntryFilter&);
template void save_pretrained<float>(const Model<float>&, const std::string&, uint64_t);
template void save_pretrained<double>(const Model<double>&, const std::string&, uint64_t);

}  // namespace strata
