#include "jobs/instance_catalog.h"

#include <yaml-cpp/yaml.h>

#include "io/files.h"
#include "util/error.h"
#include "util/nearest_name.h"
#include "util/yaml_key.h"

namespace strata::jobs {

namespace {

const std::vector<std::string> kFields = {"cores", "gpus", "memory_gib", "on_demand_usd_per_hour",
                                          "spot_usd_per_hour"};
const std::vector<std::string> kOptionalFields = {"gpu", "link_within", "link_between"};

double number(const YAML::Node& v, const std::string& where) {
  double x;
  if (!v.IsScalar() || !YAML::convert<double>::decode(v, x)) fail(where, " expects a number");
  return x;
}

std::string name(const YAML::Node& v, const std::string& where) {
  if (!v.IsScalar() || v.Scalar().empty()) fail(where, " expects a name");
  return v.Scalar();
}

}  // namespace

InstanceCatalog InstanceCatalog::load(const std::string& path) { return parse(io::read_file(path), path); }

InstanceCatalog InstanceCatalog::parse(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail(source, ": invalid YAML at line ", e.mark.line + 1, ", column ", e.mark.column + 1, ": ", e.msg);
  }
  if (!root.IsMap() || root.size() == 0)
    fail(source, ": expected a mapping of instance_type: {cores, gpus, memory_gib, on_demand_usd_per_hour, "
         "spot_usd_per_hour}");
  InstanceCatalog c;
  c.source_ = source;
  for (const auto& kv : root) {
    InstanceType t;
    t.name = yaml_key(kv.first, source);
    const std::string at = cat(source, " line ", kv.first.Mark().line + 1, ": ", t.name);
    if (!kv.second.IsMap()) fail(at, ": expected a mapping of ", kFields.size(), " fields");
    for (const auto& f : kv.second) {
      const std::string key = yaml_key(f.first, source);
      const std::string where = cat(at, ".", key);
      if (key == "cores") t.cores = static_cast<int>(number(f.second, where));
      else if (key == "gpus") t.gpus = static_cast<int>(number(f.second, where));
      else if (key == "memory_gib") t.memory_gib = number(f.second, where);
      else if (key == "on_demand_usd_per_hour") t.on_demand_usd_per_hour = number(f.second, where);
      else if (key == "spot_usd_per_hour") t.spot_usd_per_hour = number(f.second, where);
      else if (key == "gpu") t.gpu = name(f.second, where);
      else if (key == "link_within") t.link_within = name(f.second, where);
      else if (key == "link_between") t.link_between = name(f.second, where);
      else {
        std::vector<std::string> known = kFields;
        known.insert(known.end(), kOptionalFields.begin(), kOptionalFields.end());
        fail(at, ": unknown field '", key, "'", did_you_mean(key, known));
      }
    }
    for (const std::string& name : kFields)
      if (!kv.second[name]) fail(at, ": field '", name, "' is missing");
    if (t.cores < 1) fail(at, ": cores must be at least 1");
    if (t.gpus < 0) fail(at, ": gpus must be >= 0");
    if (!(t.memory_gib > 0)) fail(at, ": memory_gib must be positive");
    if (!(t.on_demand_usd_per_hour > 0) || !(t.spot_usd_per_hour > 0)) fail(at, ": prices must be positive");
    if (!t.gpu.empty() && t.gpus == 0) fail(at, ": names a gpu model (", t.gpu, ") but has gpus: 0");
    if (t.spot_usd_per_hour > t.on_demand_usd_per_hour)
      fail(at, ": spot_usd_per_hour (", t.spot_usd_per_hour, ") is above on_demand_usd_per_hour (",
           t.on_demand_usd_per_hour, ")");
    c.types_.push_back(t);
  }
  return c;
}

const InstanceType& InstanceCatalog::at(const std::string& name, const std::string& where) const {
  std::vector<std::string> names;
  for (const InstanceType& t : types_) {
    if (t.name == name) return t;
    names.push_back(t.name);
  }
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  fail(where, ": instance_type '", name, "' is not in the instance catalog ", source_, did_you_mean(name, names),
       " (known: ", list, ")");
}

}  // namespace strata::jobs
