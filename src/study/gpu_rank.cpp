#include "study/gpu_rank.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <numeric>

#include "io/files.h"
#include "train/pipeline_partition.h"
#include "util/error.h"
#include "util/nearest_name.h"
#include "util/yaml_key.h"

namespace strata::study {

namespace {

const std::vector<std::string> kPrecisions = {"fp32", "tf32", "bf16", "fp16"};
constexpr double kAdamBytesPerValue = 28;  // 4 fp32 arrays read, 3 written

double positive(const YAML::Node& v, const std::string& where) {
  double x;
  if (!v.IsScalar() || !YAML::convert<double>::decode(v, x) || !(x > 0)) fail(where, " expects a positive number");
  return x;
}

std::string text(const YAML::Node& v, const std::string& where) {
  if (!v.IsScalar() || v.Scalar().empty()) fail(where, " expects text");
  return v.Scalar();
}

std::string at_line(const std::string& source, const YAML::Node& key) {
  return cat(source, " line ", key.Mark().line + 1, ": ");
}

// {fp32: x, tf32: x, ...}: known precisions, each value positive and at most `most`.
std::map<std::string, double> per_precision(const YAML::Node& v, const std::string& where, const std::string& source,
                                            double most) {
  if (!v.IsMap() || v.size() == 0) fail(where, " expects a mapping of precision (fp32, tf32, bf16, fp16) -> number");
  std::map<std::string, double> out;
  for (const auto& kv : v) {
    const std::string p = yaml_key(kv.first, source);
    const std::string field = cat(where, ".", p);
    if (std::find(kPrecisions.begin(), kPrecisions.end(), p) == kPrecisions.end())
      fail(field, ": unknown precision", did_you_mean(p, kPrecisions), " (known: fp32, tf32, bf16, fp16)");
    out[p] = positive(kv.second, field);
    if (out[p] > most) fail(field, " is ", out[p], ": at most ", most);
  }
  return out;
}

Achieved parse_achieved(const YAML::Node& v, const std::string& where, const std::string& source) {
  static const std::vector<std::string> fields = {"products", "memory", "launch_us", "source"};
  if (!v.IsMap()) fail(where, " expects {products: {fp32: f, ...}, memory: f, launch_us: us, source: text}");
  Achieved a;
  for (const auto& kv : v) {
    const std::string k = yaml_key(kv.first, source);
    const std::string field = cat(where, ".", k);
    if (k == "products") a.products = per_precision(kv.second, field, source, 1.0);
    else if (k == "memory") {
      a.memory = positive(kv.second, field);
      if (a.memory > 1) fail(field, " is a fraction: at most 1");
    } else if (k == "launch_us") a.launch_s = positive(kv.second, field) * 1e-6;
    else if (k == "source") a.source = text(kv.second, field);
    else fail(at_line(source, kv.first), "unknown field '", k, "'", did_you_mean(k, fields));
  }
  for (const char* k : {"products", "memory", "source"})
    if (!v[k]) fail(where, ": field '", k, "' is missing");
  return a;
}

GpuModel parse_gpu(const std::string& name, const YAML::Node& v, const std::string& at, const std::string& source) {
  static const std::vector<std::string> fields = {"match", "memory_gib", "memory_gbs", "tflops", "achieved", "source"};
  if (!v.IsMap()) fail(at, ": expected a mapping of ", fields.size(), " fields");
  GpuModel g;
  g.name = name;
  for (const auto& kv : v) {
    const std::string k = yaml_key(kv.first, source);
    const std::string field = cat(at, ".", k);
    if (k == "match") g.match = text(kv.second, field);
    else if (k == "memory_gib") g.memory_gib = positive(kv.second, field);
    else if (k == "memory_gbs") g.memory_bytes_per_s = positive(kv.second, field) * 1e9;
    else if (k == "tflops") {
      for (const auto& [p, tf] : per_precision(kv.second, field, source, 1e6)) g.peak_flops[p] = tf * 1e12;
    } else if (k == "achieved") g.achieved = parse_achieved(kv.second, field, source);
    else if (k == "source") g.source = text(kv.second, field);
    else fail(at_line(source, kv.first), name, ": unknown field '", k, "'", did_you_mean(k, fields));
  }
  for (const char* k : {"match", "memory_gib", "memory_gbs", "tflops", "source"})
    if (!v[k]) fail(at, ": field '", k, "' is missing");
  if (!g.peak_flops.count("fp32")) fail(at, ".tflops: every GPU needs its fp32 peak");
  return g;
}

}  // namespace

GpuCatalog GpuCatalog::load(const std::string& path) { return parse(io::read_file(path), path); }

GpuCatalog GpuCatalog::parse(const std::string& yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    fail(source, ": invalid YAML at line ", e.mark.line + 1, ", column ", e.mark.column + 1, ": ", e.msg);
  }
  if (!root.IsMap() || !root["assumed"] || !root["gpus"] || root.size() != 2 || !root["gpus"].IsMap())
    fail(source, ": expected {assumed: {products, memory, source}, gpus: {name: {match, memory_gib, memory_gbs, "
         "tflops, source}, ...}}");
  GpuCatalog c;
  c.assumed_ = parse_achieved(root["assumed"], cat(source, ": assumed"), source);
  for (const std::string& p : kPrecisions)
    if (!c.assumed_.products.count(p)) fail(source, ": assumed.products needs a fraction for ", p);
  if (!(c.assumed_.launch_s > 0)) fail(source, ": assumed.launch_us (the time to launch one op's kernels) is missing");
  for (const auto& kv : root["gpus"]) {
    const std::string name = yaml_key(kv.first, source);
    for (const GpuModel& g : c.gpus_)
      if (g.name == name) fail(at_line(source, kv.first), "GPU '", name, "' is listed twice");
    c.gpus_.push_back(parse_gpu(name, kv.second, cat(at_line(source, kv.first), name), source));
  }
  return c;
}

const GpuModel& GpuCatalog::at(const std::string& name, const std::string& where) const {
  std::vector<std::string> names;
  for (const GpuModel& g : gpus_) {
    if (g.name == name) return g;
    names.push_back(g.name);
  }
  fail(where, ": no GPU '", name, "' in the GPU catalog", did_you_mean(name, names));
}

Achieved GpuCatalog::achieved(const GpuModel& g) const {
  if (!g.achieved) return assumed_;
  Achieved a = *g.achieved;
  if (!(a.launch_s > 0)) a.launch_s = assumed_.launch_s;
  return a;
}

const GpuModel* GpuCatalog::matching(const std::string& device_name) const {
  for (const GpuModel& g : gpus_)
    if (device_name.find(g.match) != std::string::npos) return &g;
  return nullptr;
}

std::string gpu_product_precision(const TrainingArguments& a) {
  if (a.bf16) return "bf16";
  if (a.fp16) return "fp16";
  return a.tf32 ? "tf32" : "fp32";
}

double gpu_peak_flops(const GpuModel& g, const std::string& precision, const std::string& where) {
  auto it = g.peak_flops.find(precision);
  if (it != g.peak_flops.end()) return it->second;
  if (precision == "tf32") return g.peak_flops.at("fp32");
  fail(where, ": ", g.name, " has no ", precision, " tensor cores (", g.source, "); train in ",
       g.peak_flops.count("fp16") ? "fp16 or fp32" : "fp32", " there");
}

std::string GpuRanks::describe() const {
  const bool fp32_instead = precision == "tf32" && !gpu.peak_flops.count("tf32");
  return cat(gpu.name, " (", gpu.memory_gib, " GiB), ", precision, fp32_instead ? " (fp32 on this GPU)" : "",
             " products at ", peak / 1e12, " TFLOP/s x ", achieved.products.at(precision), ", AdamW at ",
             gpu.memory_bytes_per_s / 1e9, " GB/s x ", achieved.memory, ", ", achieved.launch_s * 1e6,
             " us an op at least");
}

std::vector<double> unit_flops(const Model<float>& rank_model, int B, int T) {
  std::vector<double> flops = estimate_unit_flops(rank_model, T);
  for (double& f : flops) f *= B;
  return flops;
}

UnitProfile gpu_rank_profile(const UnitProfile& shape, const std::vector<double>& unit_flops, const GpuRanks& g) {
  if (unit_flops.size() != shape.units.size())
    fail("GPU projection: ", unit_flops.size(), " unit FLOP counts for a profile of ", shape.units.size(), " units");
  UnitProfile p = shape;
  p.threads = 1;
  const double rate = g.peak * g.achieved.products.at(g.precision);
  for (size_t u = 0; u < p.units.size(); ++u) {
    UnitWork& w = p.units[u];
    w.forward_s = std::max(unit_flops[u] / 3 / rate, w.forward_ops * g.achieved.launch_s);
    w.backward_s = std::max(unit_flops[u] * 2 / 3 / rate, w.backward_ops * g.achieved.launch_s);
  }
  p.optimizer_s_per_value = kAdamBytesPerValue / (g.gpu.memory_bytes_per_s * g.achieved.memory);
  return p;
}

double achieved_fraction(const UnitProfile& measured, const std::vector<double>& unit_flops, double peak) {
  return std::accumulate(unit_flops.begin(), unit_flops.end(), 0.0) / measured.layer_units_s() / peak;
}

double adam_memory_fraction(const UnitProfile& measured, double memory_bytes_per_s) {
  return kAdamBytesPerValue / (measured.optimizer_s_per_value * memory_bytes_per_s);
}

}  // namespace strata::study
