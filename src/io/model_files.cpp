#include "io/model_files.h"

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "io/files.h"
#include "io/python_json.h"
#include "util/error.h"

namespace strata::io {

std::string hf_model_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path root(dir), modules = root / "modules.json";
  if (fs::exists(root / "config.json") || !fs::exists(modules)) return dir;
  const nlohmann::json list = read_json_file(modules.string());
  if (!list.is_array()) fail(modules.string(), ": expected a list of modules");
  for (const auto& m : list) {
    if (!m.is_object() || !m.value("type", nlohmann::json()).is_string() ||
        !m["type"].get<std::string>().ends_with("models.Transformer"))
      continue;
    if (!m.value("path", nlohmann::json()).is_string())
      fail(modules.string(), ": the Transformer module has no \"path\" string");
    const fs::path rel(m["path"].get<std::string>());
    if (!stays_inside(rel))
      fail(modules.string(), ": the Transformer module's path '", rel.string(), "' leaves the model directory");
    const fs::path folder = root / rel;
    if (!fs::exists(folder / "config.json"))
      fail(modules.string(), ": the Transformer module's folder '", rel.string(), "' has no config.json");
    return folder.string();
  }
  fail(modules.string(), ": no sentence_transformers.models.Transformer module, and no config.json beside it");
}

namespace fs = std::filesystem;

namespace {

std::string shard_name(size_t k, size_t n) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", k, n);
  return name;
}

// model.safetensors, its index, and shards of any count.
bool is_weight_file(const std::string& name) {
  static const std::regex shard(R"(model-\d{5}-of-\d{5}\.safetensors)");
  return name == "model.safetensors" || name == "model.safetensors.index.json" || std::regex_match(name, shard);
}

}  // namespace

void write_model_weights(const std::string& dir, const std::vector<TensorToWrite>& tensors,
                         const std::map<std::string, std::string>& metadata, uint64_t max_shard_bytes) {
  STRATA_CHECK(max_shard_bytes > 0, "max_shard_bytes must be positive");
  std::vector<std::vector<TensorToWrite>> shards(1);
  uint64_t in_shard = 0, total = 0;
  for (const TensorToWrite& t : tensors) {
    const uint64_t b = byte_size(t);
    if (!shards.back().empty() && in_shard + b > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(t);
    in_shard += b;
    total += b;
  }
  std::set<std::string> written;
  if (shards.size() == 1) {
    write_safetensors((fs::path(dir) / "model.safetensors").string(), tensors, metadata);
    written.insert("model.safetensors");
  } else {
    nlohmann::json weight_map = nlohmann::json::object();
    for (size_t k = 0; k < shards.size(); ++k) {
      const std::string name = shard_name(k + 1, shards.size());
      write_safetensors((fs::path(dir) / name).string(), shards[k], metadata);
      for (const TensorToWrite& t : shards[k]) weight_map[t.name] = name;
      written.insert(name);
    }
    const nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    write_file_atomic((fs::path(dir) / "model.safetensors.index.json").string(), python_json(index) + "\n");
    written.insert("model.safetensors.index.json");
  }
  // An earlier save into this directory may have been sharded otherwise: its files would
  // mislead a reader (SafetensorsDir takes model.safetensors before an index).
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && is_weight_file(name) && !written.count(name)) fs::remove(e.path());
  }
}

uint64_t parse_shard_size(const std::string& text, const std::string& where) {
  static const std::regex form(R"(\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*)");
  std::smatch m;
  auto bad = [&] {
    fail(where, ": max_shard_size '", text, "' is not a size; expected a byte count or a number with a unit, e.g. "
         "5GB, 500MB, 2GiB (KB/MB/GB are powers of 1000, KiB/MiB/GiB of 1024)");
  };
  if (!std::regex_match(text, m, form)) bad();
  const double value = std::stod(m[1].str());
  std::string unit = m[2].str();
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  static const std::map<std::string, double> scale = {
      {"", 1},       {"B", 1},           {"KB", 1e3},           {"MB", 1e6},    {"GB", 1e9}, {"TB", 1e12},
      {"KIB", 1024}, {"MIB", 1048576.0}, {"GIB", 1073741824.0}, {"TIB", 1099511627776.0}};
  const auto it = scale.find(unit);
  if (it == scale.end()) bad();
  const double bytes = value * it->second;
  if (!(bytes >= 1)) fail(where, ": max_shard_size '", text, "' must be at least 1 byte");
  return static_cast<uint64_t>(bytes);
}

}  // namespace strata::io
