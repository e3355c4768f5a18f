// The instance catalog: what each `instance_type` of a job spec is (cores, GPUs, memory) and
// what an hour of it costs on demand and as spot capacity. A YAML file users edit
// (catalog/instances.yaml ships SageMaker's seed types and local ones); docs/jobs.md.
#pragma once
#include <string>
#include <vector>

namespace strata::jobs {

struct InstanceType {
  std::string name;
  int cores = 0;  // vCPUs
  int gpus = 0;
  double memory_gib = 0;
  double on_demand_usd_per_hour = 0;
  double spot_usd_per_hour = 0;
  // For projections (optional): the GPU model (catalog/gpus.yaml) and the all-reduce links
  // between its GPUs and between instances (catalog/links.yaml); "" where not given.
  std::string gpu, link_within, link_between;
};

class InstanceCatalog {
 public:
  // Reads and checks the whole file: unknown fields (with a suggestion), missing ones,
  // non-positive sizes, a spot price above the on-demand one. Errors name the file and line.
  static InstanceCatalog load(const std::string& path);
  static InstanceCatalog parse(const std::string& yaml_text, const std::string& source);

  // The type called `name`; an error naming `where`, the nearest known type and the file.
  const InstanceType& at(const std::string& name, const std::string& where) const;
  const std::vector<InstanceType>& types() const { return types_; }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::vector<InstanceType> types_;
};

}  // namespace strata::jobs
