#include "train/optimizer_files.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <vector>

#include "io/files.h"
#include "io/safetensors.h"
#include "util/error.h"
#include "util/shape_str.h"

namespace strata {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFullFile = "optimizer.safetensors";
constexpr const char* kLayoutFile = "optimizer_layout.json";
constexpr int kShardTag = 4101;  // point-to-point tag of the slices sent to rank 0

std::string shard_file(int rank, int parts) {
  char name[64];
  std::snprintf(name, sizeof name, "optimizer-%05d-of-%05d.safetensors", rank + 1, parts);
  return name;
}

std::map<std::string, std::string> metadata(const Optimizer<float>& opt) {
  return {{"format", "pt"}, {"optimizer", opt.config().name}, {"step", std::to_string(opt.steps_taken())}};
}

void check_optimizer(const std::string& file, const std::string& saved, const Optimizer<float>& opt) {
  if (saved != opt.config().name)
    fail(file, ": holds '", saved, "' state but this run uses optim '", opt.config().name, "'");
}

// Values [from, from + n) of a 1-D view of t into dst: straight from the mapping for F32, else
// through a converted copy of the whole tensor.
void copy_values(const io::TensorView& t, size_t from, size_t n, float* dst) {
  if (t.dtype == DType::F32) {
    std::memcpy(dst, t.data + from * sizeof(float), n * sizeof(float));
    return;
  }
  std::vector<float> all(static_cast<size_t>(t.numel()));
  io::convert_to<float>(t, all.data());
  std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(from), n, dst);
}

nlohmann::json table_json(const ParamTable& table) {
  nlohmann::json params = nlohmann::json::array();
  for (const ParamEntry& e : table.entries()) params.push_back({{"name", e.name}, {"offset", e.offset}, {"shape", e.shape}});
  return params;
}

void read_full(const std::string& dir, const ParamTable& table, Optimizer<float>& opt) {
  const std::string path = (fs::path(dir) / kFullFile).string();
  const io::SafetensorsFile f(path);
  auto meta = f.metadata();
  check_optimizer(path, meta["optimizer"], opt);
  for (auto& [kind, buf] : opt.state_buffers()) {
    for (const ParamEntry& e : table.entries()) {
      const size_t b = std::max(e.offset, opt.begin()), end = std::min(e.offset + e.numel, opt.end());
      if (b >= end) continue;
      const io::TensorView* t = f.find(kind + "." + e.name);
      if (!t) fail(path, ": no tensor '", kind, ".", e.name, "': the checkpoint is from another model");
      if (t->shape != e.shape)
        fail(path, ": tensor '", t->name, "' has shape ", shape_str(t->shape), ", the model has ", shape_str(e.shape));
      copy_values(*t, b - e.offset, end - b, buf->data() + (b - opt.begin()));
    }
  }
  opt.set_steps_taken(std::stoll(meta["step"]));
}

void read_shards(const std::string& dir, const ParamTable& table, Optimizer<float>& opt) {
  const std::string layout_path = (fs::path(dir) / kLayoutFile).string();
  const nlohmann::json layout = io::read_json_file(layout_path);
  try {
    check_optimizer(layout_path, layout.at("optimizer").get<std::string>(), opt);
    if (layout.at("flat_size").get<size_t>() != table.total())
      fail(layout_path, ": the optimizer state covers ", layout.at("flat_size").get<size_t>(),
           " parameters, the model has ", table.total(), ": the checkpoint is from another model");
    if (layout.at("parameters") != table_json(table))
      fail(layout_path, ": its parameter table (names, offsets, shapes) differs from the model's: the checkpoint is "
           "from another model");
    for (const auto& shard : layout.at("shards")) {
      const size_t b = shard.at("begin").get<size_t>(), e = shard.at("end").get<size_t>();
      const size_t lo = std::max(b, opt.begin()), hi = std::min(e, opt.end());
      if (lo >= hi) continue;
      const std::string path = (fs::path(dir) / shard.at("file").get<std::string>()).string();
      const io::SafetensorsFile f(path);
      for (auto& [kind, buf] : opt.state_buffers()) {
        const io::TensorView* t = f.find(kind);
        if (!t) fail(path, ": no tensor '", kind, "' (", kLayoutFile, " lists this file for offsets ", b, "..", e, ")");
        if (t->numel() != static_cast<int64_t>(e - b))
          fail(path, ": tensor '", kind, "' has ", t->numel(), " values, ", kLayoutFile, " says ", e - b, " (offsets ",
               b, "..", e, ")");
        copy_values(*t, lo - b, hi - lo, buf->data() + (lo - opt.begin()));
      }
    }
    opt.set_steps_taken(layout.at("step").get<int64_t>());
  } catch (const nlohmann::json::exception& e) {
    fail(layout_path, ": not a strata optimizer layout record (", e.what(), ")");
  }
}

}  // namespace

void write_optimizer_state(const std::string& dir, const ParamTable& table, Optimizer<float>& opt) {
  STRATA_CHECK(opt.begin() == 0 && opt.end() == table.total(), "write_optimizer_state: the optimizer owns ",
               opt.begin(), "..", opt.end(), " of ", table.total(), " values; a sliced one writes shards");
  std::vector<io::TensorToWrite> tensors;
  for (auto& [kind, buf] : opt.state_buffers())
    for (const ParamEntry& e : table.entries())
      tensors.push_back({kind + "." + e.name, DType::F32, e.shape, buf->data() + e.offset});
  io::write_safetensors((fs::path(dir) / kFullFile).string(), tensors, metadata(opt));
}

void write_optimizer_slices(const std::string& dir, const ParamTable& table, Optimizer<float>& opt, bool writes,
                            const SliceLayout& lay, dist::Communicator& world) {
  // Every rank's slice and place in the grid, so that rank 0 knows whom to receive from.
  const nlohmann::json mine = {{"rank", world.rank()}, {"writes", writes}, {"begin", opt.begin()}, {"end", opt.end()},
                               {"data_parallel_rank", lay.data_parallel_rank}, {"pipeline_stage", lay.pipeline_stage}};
  std::vector<nlohmann::json> slices;
  for (const std::string& s : world.all_gather_bytes(mine.dump(), "optimizer slices"))
    if (auto j = nlohmann::json::parse(s); j.at("writes").get<bool>()) slices.push_back(std::move(j));
  std::sort(slices.begin(), slices.end(),
            [](const nlohmann::json& a, const nlohmann::json& b) { return a.at("begin") < b.at("begin"); });
  auto states = opt.state_buffers();
  if (world.rank() != 0) {
    if (writes)
      for (auto& [kind, buf] : states) world.send(buf->data(), buf->size() * sizeof(float), 0, kShardTag);
    return;
  }
  const int parts = static_cast<int>(slices.size());
  size_t covered = 0;
  nlohmann::json files = nlohmann::json::array();
  std::vector<std::vector<float>> received(states.size());
  for (int k = 0; k < parts; ++k) {
    const nlohmann::json& sl = slices[static_cast<size_t>(k)];
    const size_t begin = sl.at("begin").get<size_t>(), end = sl.at("end").get<size_t>();
    const int from = sl.at("rank").get<int>();
    STRATA_CHECK(begin == covered, "optimizer slices: the slice from rank ", from, " starts at ", begin,
                 ", the slices before it end at ", covered);
    covered = end;
    std::vector<io::TensorToWrite> tensors;
    for (size_t i = 0; i < states.size(); ++i) {
      const float* data = states[i].second->data();
      if (from != 0) {
        received[i].resize(end - begin);
        world.recv(received[i].data(), received[i].size() * sizeof(float), from, kShardTag);
        data = received[i].data();
      }
      tensors.push_back({states[i].first, DType::F32, {static_cast<int64_t>(end - begin)}, data});
    }
    auto meta = metadata(opt);
    meta["begin"] = std::to_string(begin);
    meta["end"] = std::to_string(end);
    const std::string name = shard_file(k, parts);
    io::write_safetensors((fs::path(dir) / name).string(), tensors, meta);
    files.push_back({{"file", name}, {"data_parallel_rank", sl.at("data_parallel_rank")},
                     {"pipeline_stage", sl.at("pipeline_stage")}, {"begin", begin}, {"end", end}});
  }
  STRATA_CHECK(covered == table.total(), "optimizer slices cover ", covered, " of ", table.total(), " values");
  nlohmann::json kinds = nlohmann::json::array();
  for (auto& [kind, buf] : states) kinds.push_back(kind);
  nlohmann::json layout = {{"format", "strata flat optimizer shards"},
                           {"optimizer", opt.config().name},
                           {"step", opt.steps_taken()},
                           {"zero_stage", lay.zero_stage},
                           {"data_parallel_degree", lay.data_parallel_degree},
                           {"pipeline_parallel_degree", lay.pipeline_parallel_degree},
                           {"tensor_parallel_degree", 1},
                           {"flat_size", table.total()},
                           {"states", kinds},
                           {"shards", files},
                           {"parameters", table_json(table)}};
  // How the buffer was cut into data-parallel slices (ZeRO). Under a pipeline each stage's window
  // is cut on its own: the shards' ranges say it all.
  if (lay.pipeline_parallel_degree == 1) {
    layout["shard_size"] = lay.shards ? lay.shards->shard_size() : table.total();
    layout["padding"] = lay.shards ? lay.shards->padding() : 0;
  }
  io::write_file_atomic((fs::path(dir) / kLayoutFile).string(), layout.dump(1) + "\n");
}

void read_optimizer_state(const std::string& dir, const ParamTable& table, Optimizer<float>& opt) {
  if (fs::exists(fs::path(dir) / kLayoutFile)) return read_shards(dir, table, opt);
  if (!fs::exists(fs::path(dir) / kFullFile))
    fail(dir, ": not a trainer checkpoint (no ", kFullFile, " and no ", kLayoutFile, ")");
  read_full(dir, table, opt);
}

}  // namespace strata
