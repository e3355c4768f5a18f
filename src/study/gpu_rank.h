// GPU ranks in projections past this machine (`strata plan`, `strata study`): what a rank's
// step would take on a GPU of catalog/gpus.yaml, from the floating-point operations of each
// layer unit (train/pipeline_partition.h's estimate) and the GPU's rates:
//   a unit's forward + backward = its FLOPs / (the GPU's peak in the products' precision
//                                              x the fraction of it a training step reaches)
//   split one third forward, two thirds backward (2 and 4 FLOPs per weight and token), and
//   never less than the unit's op calls x the time to launch one (a small unit waits on the
//   host, not on the GPU);
//   AdamW, per parameter value = 28 bytes (fp32 parameter, gradient and two moments read; the
//                                parameter and moments written) / (memory bandwidth x fraction).
// The fractions are measured ones where a run on that GPU measured them (a catalog entry's
// `achieved`, or `strata plan` on a machine with that GPU), the file's stated assumption
// otherwise. What a rank sends and owns (tensor-parallel bytes, stage boundaries, parameters)
// comes from the CPU profile of the same micro-batch and split: shapes, not timings.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/model.h"
#include "train/training_args.h"
#include "train/unit_profile.h"

namespace strata::study {

struct Achieved {
  std::map<std::string, double> products;  // precision -> fraction of its peak a step's products reach
  double memory = 0;                       // fraction of the memory bandwidth AdamW reaches
  double launch_s = 0;  // the host's time to launch one op's kernels; 0 in a GPU's own: the assumed one
  std::string source;
};

struct GpuModel {
  std::string name;
  std::string match;  // a piece of the device's name (`strata info`) that identifies this model
  double memory_gib = 0;
  double memory_bytes_per_s = 0;
  std::map<std::string, double> peak_flops;  // "fp32", "tf32", "bf16", "fp16" -> FLOP/s, dense
  std::optional<Achieved> achieved;          // measured on this model
  std::string source;
};

class GpuCatalog {
 public:
  // Reads and checks the whole file; errors name the file, the line and the field.
  static GpuCatalog load(const std::string& path);
  static GpuCatalog parse(const std::string& yaml_text, const std::string& source);

  const GpuModel& at(const std::string& name, const std::string& where) const;
  // The model whose `match` is in a device's name ("NVIDIA H100 80GB HBM3"); null for none.
  const GpuModel* matching(const std::string& device_name) const;
  // g's measured fractions, else the stated assumption (and its launch time where g has none).
  Achieved achieved(const GpuModel& g) const;
  const std::vector<GpuModel>& gpus() const { return gpus_; }

 private:
  std::vector<GpuModel> gpus_;
  Achieved assumed_;
};

// The precision of a job's products on a GPU, by HF's flags: "bf16", "fp16", "tf32" or "fp32".
std::string gpu_product_precision(const TrainingArguments& a);

// g's peak for `precision`. TF32 asked of a GPU without it (V100) runs fp32, as PyTorch runs
// it; bf16 or fp16 without tensor cores for it is an error naming `where` and the GPU.
double gpu_peak_flops(const GpuModel& g, const std::string& precision, const std::string& where);

// The ranks of a GPU instance type, one per GPU, for a job whose products run in `precision`.
struct GpuRanks {
  GpuModel gpu;
  Achieved achieved;  // measured on this machine's GPU, else the catalog's for `gpu`
  std::string precision;
  double peak = 0;  // FLOP/s in `precision` (gpu_peak_flops)
  std::string describe() const;  // "a100-sxm4-40gb (40 GiB), bf16 products at 312 TFLOP/s x 0.35, ..."
};

// Each unit's FLOPs (forward + backward) over B x T rows of `rank_model` (a tensor-parallel
// rank's slices): train/pipeline_partition.h's estimate per sequence, times B.
std::vector<double> unit_flops(const Model<float>& rank_model, int B, int T);

// A GPU rank's profile, one device (threads 1): `shape`'s traffic and ownership, unit times
// from `unit_flops` (per unit, for shape's B x T rows) at g's rates.
UnitProfile gpu_rank_profile(const UnitProfile& shape, const std::vector<double>& unit_flops, const GpuRanks& g);

// The fraction of `peak` a profile measured on a GPU reached: its units' FLOPs over their time.
double achieved_fraction(const UnitProfile& measured, const std::vector<double>& unit_flops, double peak);
// The fraction of `memory_bytes_per_s` its AdamW reached (the bytes gpu_rank_profile charges).
double adam_memory_fraction(const UnitProfile& measured, double memory_bytes_per_s);

}  // namespace strata::study
