#include "train/optimizer_files.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <vector>

#include "io/files.h"
#include "io/safetensors.h"
#include "tensor/device_array.h"
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

// The part of entry e that opt owns, from the whole tensor `whole(e)` returns (HF's shape):
// under tensor parallelism this rank's slice of it.
template <typename WholeFn>
void fill_owned(const ParamEntry& e, const TensorSplit& split, Optimizer<float>& opt, float* state, WholeFn whole) {
  const size_t b = std::max(e.offset, opt.begin()), end = std::min(e.offset + e.numel, opt.end());
  if (b >= end) return;
  const std::vector<float> all = whole(e);
  const float* src = all.data();
  std::vector<float> mine;
  if (!e.replicated() && split.split()) {
    mine.resize(e.numel);
    take_slice(e, split, all.data(), mine.data());
    src = mine.data();
  }
  std::copy_n(src + (b - e.offset), end - b, state + (b - opt.begin()));
}

// The optimizer's state buffers as the host reads and writes them: the buffers themselves on the
// CPU; on a GPU host copies of them, which upload() sends back after a read.
class HostStates {
 public:
  explicit HostStates(Optimizer<float>& opt) {
    for (auto& [kind, buf] : opt.state_buffers()) {
      states_.push_back({kind, buf, {}});
      host_view(buf->data(), buf->size(), states_.back().copy, buf->device());  // a copy on a GPU only
    }
  }
  size_t size() const { return states_.size(); }
  const std::string& kind(size_t i) const { return states_[i].kind; }
  float* data(size_t i) { return states_[i].copy.empty() ? states_[i].buf->data() : states_[i].copy.data(); }
  size_t values(size_t i) const { return states_[i].buf->size(); }
  void upload() {
    for (State& s : states_)
      if (!s.copy.empty())
        kernels::copy_bytes(s.buf->data(), s.buf->device(), s.copy.data(), kernels::Device::cpu(),
                            s.copy.size() * sizeof(float));
  }

 private:
  struct State {
    std::string kind;
    Buffer<float>* buf;
    std::vector<float> copy;
  };
  std::vector<State> states_;
};

void read_full(const std::string& dir, const ParamTable& table, Optimizer<float>& opt, const TensorSplit& split) {
  const std::string path = (fs::path(dir) / kFullFile).string();
  const io::SafetensorsFile f(path);
  auto meta = f.metadata();
  check_optimizer(path, meta["optimizer"], opt);
  HostStates states(opt);
  for (size_t i = 0; i < states.size(); ++i) {
    const std::string& kind = states.kind(i);
    for (const ParamEntry& e : table.entries()) {
      fill_owned(e, split, opt, states.data(i), [&](const ParamEntry& x) {
        const io::TensorView* t = f.find(kind + "." + x.name);
        if (!t) fail(path, ": no tensor '", kind, ".", x.name, "': the checkpoint is from another model");
        if (t->shape != x.global_shape)
          fail(path, ": tensor '", t->name, "' has shape ", shape_str(t->shape), ", the model has ",
               shape_str(x.global_shape));
        std::vector<float> all(static_cast<size_t>(t->numel()));
        copy_values(*t, 0, all.size(), all.data());
        return all;
      });
    }
  }
  states.upload();
  opt.set_steps_taken(std::stoll(meta["step"]));
}

// Flat values [lo, hi) of state `kind` from the shard files of a layout record.
void read_flat_range(const std::string& dir, const nlohmann::json& layout, const std::string& kind, size_t lo,
                     size_t hi, float* dst) {
  for (const auto& shard : layout.at("shards")) {
    const size_t b = shard.at("begin").get<size_t>(), e = shard.at("end").get<size_t>();
    const size_t from = std::max(b, lo), to = std::min(e, hi);
    if (from >= to) continue;
    const std::string path = (fs::path(dir) / shard.at("file").get<std::string>()).string();
    const io::SafetensorsFile f(path);
    const io::TensorView* t = f.find(kind);
    if (!t) fail(path, ": no tensor '", kind, "' (", kLayoutFile, " lists this file for offsets ", b, "..", e, ")");
    if (t->numel() != static_cast<int64_t>(e - b))
      fail(path, ": tensor '", kind, "' has ", t->numel(), " values, ", kLayoutFile, " says ", e - b, " (offsets ", b,
           "..", e, ")");
    copy_values(*t, from - b, to - from, dst + (from - lo));
  }
}

// A checkpoint of slices of the unsplit flat buffer, into a tensor-parallel rank: each whole
// parameter is read from the slices by its offset in the record's table, then cut.
void read_shards_split(const std::string& dir, const nlohmann::json& layout, const std::string& layout_path,
                       const ParamTable& table, Optimizer<float>& opt, const TensorSplit& split) {
  std::map<std::string, std::pair<size_t, std::vector<int64_t>>> saved;  // name -> offset, shape
  for (const auto& p : layout.at("parameters"))
    saved[p.at("name").get<std::string>()] = {p.at("offset").get<size_t>(), p.at("shape").get<std::vector<int64_t>>()};
  HostStates states(opt);
  for (size_t i = 0; i < states.size(); ++i)
    for (const ParamEntry& e : table.entries())
      fill_owned(e, split, opt, states.data(i), [&](const ParamEntry& x) {
        auto it = saved.find(x.name);
        if (it == saved.end() || it->second.second != x.global_shape)
          fail(layout_path, ": its parameter table has no '", x.name, "' of shape ", shape_str(x.global_shape),
               ": the checkpoint is from another model");
        std::vector<float> all(global_numel(x));
        read_flat_range(dir, layout, states.kind(i), it->second.first, it->second.first + all.size(), all.data());
        return all;
      });
  states.upload();
  opt.set_steps_taken(layout.at("step").get<int64_t>());
}

void read_shards(const std::string& dir, const ParamTable& table, Optimizer<float>& opt, const TensorSplit& split) {
  const std::string layout_path = (fs::path(dir) / kLayoutFile).string();
  const nlohmann::json layout = io::read_json_file(layout_path);
  try {
    check_optimizer(layout_path, layout.at("optimizer").get<std::string>(), opt);
    if (split.split()) return read_shards_split(dir, layout, layout_path, table, opt, split);
    if (layout.at("flat_size").get<size_t>() != table.total())
      fail(layout_path, ": the optimizer state covers ", layout.at("flat_size").get<size_t>(),
           " parameters, the model has ", table.total(), ": the checkpoint is from another model");
    if (layout.at("parameters") != table_json(table))
      fail(layout_path, ": its parameter table (names, offsets, shapes) differs from the model's: the checkpoint is "
           "from another model");
    HostStates states(opt);
    for (size_t i = 0; i < states.size(); ++i)
      read_flat_range(dir, layout, states.kind(i), opt.begin(), opt.end(), states.data(i));
    states.upload();
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
  HostStates states(opt);
  for (size_t i = 0; i < states.size(); ++i)
    for (const ParamEntry& e : table.entries())
      tensors.push_back({states.kind(i) + "." + e.name, DType::F32, e.shape, states.data(i) + e.offset});
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
  HostStates states(opt);
  if (world.rank() != 0) {
    if (writes)
      for (size_t i = 0; i < states.size(); ++i)
        world.send(states.data(i), states.values(i) * sizeof(float), 0, kShardTag);
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
      const float* data = states.data(i);
      if (from != 0) {
        received[i].resize(end - begin);
        world.recv(received[i].data(), received[i].size() * sizeof(float), from, kShardTag);
        data = received[i].data();
      }
      tensors.push_back({states.kind(i), DType::F32, {static_cast<int64_t>(end - begin)}, data});
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
  for (size_t i = 0; i < states.size(); ++i) kinds.push_back(states.kind(i));
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

void write_optimizer_unsplit(const std::string& dir, const ParamTable& table, const TensorSplit& split,
                             Optimizer<float>& opt, bool writes, dist::Communicator& world) {
  const bool root = world.rank() == 0;
  HostStates states(opt);
  // Rank 0 keeps every whole tensor until the file is written.
  std::vector<std::vector<float>> kept;
  kept.reserve(states.size() * table.entries().size());
  std::vector<io::TensorToWrite> tensors;
  std::vector<float> mine;
  for (size_t i = 0; i < states.size(); ++i)
    for (const ParamEntry& e : table.entries()) {
      std::vector<float> whole(global_numel(e), 0.0f);
      const size_t b = std::max(e.offset, opt.begin()), end = std::min(e.offset + e.numel, opt.end());
      const bool counts = writes && b < end && (!e.replicated() || split.rank == 0);
      if (counts) {
        mine.assign(e.numel, 0.0f);
        std::copy_n(states.data(i) + (b - opt.begin()), end - b, mine.data() + (b - e.offset));
        put_slice(e, split, mine.data(), whole.data());
      }
      world.reduce_sum(whole.data(), whole.size(), 0, "optimizer state of a parameter, to save");
      if (!root) continue;
      kept.push_back(std::move(whole));
      tensors.push_back({states.kind(i) + "." + e.name, DType::F32, e.global_shape, kept.back().data()});
    }
  if (root) io::write_safetensors((fs::path(dir) / kFullFile).string(), tensors, metadata(opt));
}

void read_optimizer_state(const std::string& dir, const ParamTable& table, Optimizer<float>& opt,
                          const TensorSplit& split) {
  if (fs::exists(fs::path(dir) / kLayoutFile)) return read_shards(dir, table, opt, split);
  if (!fs::exists(fs::path(dir) / kFullFile))
    fail(dir, ": not a trainer checkpoint (no ", kFullFile, " and no ", kLayoutFile, ")");
  read_full(dir, table, opt, split);
}

}  // namespace strata
