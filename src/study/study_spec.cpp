#include "study/study_spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "io/files.h"
#include "util/error.h"
#include "util/nearest_name.h"
#include "util/yaml_key.h"

namespace strata::study {

namespace {

std::string line_of(const YAML::Node& n, const std::string& source) { return cat(source, " line ", n.Mark().line + 1); }

int64_t integer(const YAML::Node& v, const std::string& where, const std::string& what, int64_t min) {
  int64_t x = 0;
  if (!v.IsScalar() || !YAML::convert<int64_t>::decode(v, x) || x < min)
    fail(where, ": ", what, " expects an integer >= ", min, ", got '", v.IsScalar() ? v.Scalar() : "a collection", "'");
  return x;
}

std::string flow_text(const YAML::Node& v) {
  YAML::Emitter e;
  e << YAML::Flow << v;
  return e.c_str();
}

// One value of an axis, checked, as the text a cell keeps.
std::string axis_value(Axis a, const YAML::Node& v, const std::string& where) {
  const std::string what = cat("grid axis ", axis_name(a));
  switch (a) {
    case Axis::InstanceType:
      if (!v.IsScalar() || v.Scalar().empty()) fail(where, ": ", what, " expects instance type names");
      return v.Scalar();
    case Axis::InstanceCount:
    case Axis::ProcessesPerHost:
    case Axis::PerDeviceTrainBatchSize:
    case Axis::MaxTrainSamples: return std::to_string(integer(v, where, what, 1));
    case Axis::DataloaderNumWorkers: return std::to_string(integer(v, where, what, 0));
    case Axis::LrScaling:
      if (!v.IsScalar() || (v.Scalar() != "none" && v.Scalar() != "linear" && v.Scalar() != "sqrt"))
        fail(where, ": ", what, " expects none, linear or sqrt, got '", v.IsScalar() ? v.Scalar() : "a collection", "'");
      return v.Scalar();
    case Axis::Cluster: {
      const std::string s = v.IsScalar() ? v.Scalar() : "";
      if (s == "local" || s == "netns" || (s.rfind("netns:", 0) == 0 && s.size() > 6)) return s;
      fail(where, ": ", what, " expects local, netns or netns:RATE (e.g. netns:100mbit), got '", s, "'");
    }
    case Axis::Layout:
      if (!v.IsMap()) fail(where, ": ", what, " expects mappings of parallel options, e.g. {tensor_parallel_degree: 2}");
      return flow_text(v);
  }
  return "";
}

// One mapping of axis -> values, crossed: the cells in the order of the axes' values, the
// first-named axis varying slowest.
std::vector<CellValues> cross(const YAML::Node& grid, const std::string& source) {
  std::vector<std::pair<Axis, std::vector<std::string>>> axes;
  for (const auto& kv : grid) {
    const std::string key = yaml_key(kv.first, source);
    const std::string where = line_of(kv.first, source);
    const auto& names = axis_names();
    const auto it = std::find_if(names.begin(), names.end(), [&](const auto& n) { return n.second == key; });
    if (it == names.end()) {
      std::vector<std::string> known;
      for (const auto& n : names) known.push_back(n.second);
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      fail(where, ": unknown grid axis '", key, "'", did_you_mean(key, known), " (axes: ", list, ")");
    }
    for (const auto& seen : axes)
      if (seen.first == it->first) fail(where, ": grid axis ", key, " is given twice");
    const YAML::Node& values = kv.second;
    if (!values.IsSequence()) fail(where, ": grid axis ", key, " expects a list of values, e.g. ", key, ": [a, b]");
    if (values.size() == 0) fail(where, ": grid axis ", key, " has no values: the grid would be empty");
    std::vector<std::string> texts;
    for (const auto& v : values) texts.push_back(axis_value(it->first, v, line_of(v, source)));
    axes.emplace_back(it->first, texts);
  }
  std::sort(axes.begin(), axes.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<CellValues> cells{{}};
  for (const auto& [axis, values] : axes) {
    std::vector<CellValues> next;
    for (const CellValues& c : cells)
      for (const std::string& v : values) {
        CellValues with = c;
        with.emplace_back(axis, v);
        next.push_back(std::move(with));
      }
    cells = std::move(next);
  }
  return cells;
}

std::string cell_text(const CellValues& c) {
  std::string s;
  for (const auto& [a, v] : c) s += cat(axis_name(a), "=", v, ";");
  return s;
}

}  // namespace

const std::vector<std::pair<Axis, std::string>>& axis_names() {
  static const std::vector<std::pair<Axis, std::string>> names = {
      {Axis::InstanceType, "instance_type"},
      {Axis::InstanceCount, "instance_count"},
      {Axis::ProcessesPerHost, "processes_per_host"},
      {Axis::Cluster, "cluster"},
      {Axis::Layout, "layout"},
      {Axis::PerDeviceTrainBatchSize, "per_device_train_batch_size"},
      {Axis::MaxTrainSamples, "max_train_samples"},
      {Axis::DataloaderNumWorkers, "dataloader_num_workers"},
      {Axis::LrScaling, "lr_scaling"},
  };
  return names;
}

const char* axis_name(Axis a) {
  for (const auto& [axis, name] : axis_names())
    if (axis == a) return name.c_str();
  return "?";
}

StudySpec parse_study_spec(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail(source, ": invalid YAML at line ", e.mark.line + 1, ", column ", e.mark.column + 1, ": ", e.msg);
  }
  if (!root.IsMap()) fail(source, ": expected a YAML mapping of study options (docs/studies.md)");
  StudySpec s;
  s.source = source;
  YAML::Node grid;
  std::string grid_where;
  using Handler = std::function<void(const YAML::Node&, const std::string&)>;
  auto text_of = [](std::string& dst, const char* key) -> Handler {
    return [&dst, key](const YAML::Node& v, const std::string& w) {
      if (!v.IsScalar() || v.Scalar().empty()) fail(w, ": ", key, " expects a single non-empty value");
      dst = v.Scalar();
    };
  };
  const std::vector<std::pair<std::string, Handler>> handlers = {
      {"study", text_of(s.name, "study")},
      {"job", text_of(s.job_path, "job")},
      {"output_dir", text_of(s.output_dir, "output_dir")},
      {"repeats", [&](const YAML::Node& v, const std::string& w) { s.repeats = static_cast<int>(integer(v, w, "repeats", 1)); }},
      {"reference_global_batch",
       [&](const YAML::Node& v, const std::string& w) { s.reference_global_batch = integer(v, w, "reference_global_batch", 1); }},
      {"budget",
       [&](const YAML::Node& v, const std::string& w) {
         if (!v.IsMap() || v.size() != 1 || !(v["samples"] || v["max_steps"]))
           fail(w, ": budget expects one of {samples: N} (every cell sees N samples) or {max_steps: N}");
         if (v["samples"]) s.budget.samples = integer(v["samples"], w, "budget.samples", 1);
         if (v["max_steps"]) s.budget.max_steps = integer(v["max_steps"], w, "budget.max_steps", 1);
       }},
      {"projection",
       [&](const YAML::Node& v, const std::string& w) {
         const char* expected =
             ": projection expects {instance_type: T, ranks_per_host: R, instance_counts: [..], link: L, layouts: [{..}, ..]}";
         if (!v.IsMap() || !v["instance_type"] || !v["instance_counts"] || !v["link"]) fail(w, expected);
         s.projection.instance_type = v["instance_type"].Scalar();
         s.projection.link = v["link"].Scalar();
         if (v["ranks_per_host"]) s.projection.ranks_per_host = static_cast<int>(integer(v["ranks_per_host"], w, "projection.ranks_per_host", 1));
         if (!v["instance_counts"].IsSequence() || v["instance_counts"].size() == 0) fail(w, expected);
         for (const auto& n : v["instance_counts"])
           s.projection.instance_counts.push_back(static_cast<int>(integer(n, w, "projection.instance_counts", 1)));
         if (v["layouts"]) {
           if (!v["layouts"].IsSequence() || v["layouts"].size() == 0) fail(w, expected);
           for (const auto& l : v["layouts"]) {
             if (!l.IsMap())
               fail(line_of(l, s.source), ": projection.layouts expects mappings of parallel options, e.g. {tensor_parallel_degree: 2}");
             s.projection.layouts.push_back(flow_text(l));
           }
         } else {
           s.projection.layouts.push_back("{}");  // data parallelism only
         }
       }},
      {"grid",
       [&](const YAML::Node& v, const std::string& w) {
         grid = v;
         grid_where = w;
       }},
  };
  for (const auto& kv : root) {
    const std::string key = yaml_key(kv.first, source);
    const std::string where = line_of(kv.first, source);
    const auto it = std::find_if(handlers.begin(), handlers.end(), [&](const auto& h) { return h.first == key; });
    if (it == handlers.end()) {
      std::vector<std::string> known;
      for (const auto& h : handlers) known.push_back(h.first);
      fail(where, ": unknown study option '", key, "'", did_you_mean(key, known), " (docs/studies.md lists them)");
    }
    it->second(kv.second, where);
  }
  for (const char* required : {"study", "job", "output_dir", "budget", "grid"})
    if (!root[required]) fail(source, ": ", required, " is required (docs/studies.md)");
  std::vector<YAML::Node> grids;
  if (grid.IsMap()) grids.push_back(grid);
  else if (grid.IsSequence())
    for (const auto& g : grid) grids.push_back(g);
  else fail(grid_where, ": grid expects a mapping of axis: [values], or a list of such mappings");
  if (grids.empty()) fail(grid_where, ": the grid is empty: give at least one axis with values");
  std::set<std::string> seen;
  for (const YAML::Node& g : grids) {
    if (!g.IsMap()) fail(line_of(g, source), ": each grid expects a mapping of axis: [values]");
    if (g.size() == 0) fail(line_of(g, source), ": the grid is empty: give at least one axis with values");
    for (CellValues& c : cross(g, source)) {
      const std::string t = cell_text(c);
      if (seen.insert(t).second) {
        s.cells.push_back(std::move(c));
        s.grid_text += t + "\n";
      }
    }
  }
  bool scaled = false;
  for (const CellValues& c : s.cells)
    for (const auto& [a, v] : c) scaled |= a == Axis::LrScaling && v != "none";
  if (scaled && s.reference_global_batch == 0)
    fail(grid_where, ": lr_scaling linear or sqrt needs reference_global_batch: the global batch at which the base "
         "job's learning_rate holds");
  return s;
}

StudySpec load_study_spec(const std::string& path) { return parse_study_spec(io::read_file(path), path); }

uint64_t study_fingerprint(const StudySpec& s, const std::string& job_text, const std::string& training_text) {
  const std::string all = cat(job_text, "\n--\n", training_text, "\n--\nbudget ", s.budget.samples, " ",
                              s.budget.max_steps, " ref ", s.reference_global_batch, "\n--\n", s.grid_text);
  uint64_t h = 1469598103934665603ull;  // FNV-1a: stable across builds and machines, unlike std::hash
  for (unsigned char c : all) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace strata::study
