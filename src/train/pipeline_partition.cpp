#include "train/pipeline_partition.h"

#include <numeric>

#include "dist/stage_partition.h"
#include "util/error.h"

namespace strata {

std::vector<double> estimate_unit_flops(const Model<float>& model, int T) {
  const auto& entries = model.table().entries();
  const double t = T;
  // What a unit hands on per token: the hidden size, and twice it after an encoder-decoder's
  // decoder blocks (the encoder's output goes along), whose self- and cross-attention each
  // cost what an encoder block's attention does when targets are as long as sources.
  auto width = [&](int u) { return static_cast<double>(model.boundary_values(1, T, T, u)) / t; };
  std::vector<double> flops(static_cast<size_t>(model.num_units()), 0.0);
  flops[0] = 6 * t * width(0);
  for (int u = 1; u < model.num_units(); ++u) {
    double matmul = 0;  // a block gathers from the embedding tables it reads (an encoder-decoder's decoder
                        // embeddings, T5's position bias); a head tied to one multiplies by it
    for (size_t e : model.unit_parameters(u))
      if (entries[e].shape.size() == 2 && (u == model.head_unit() || !model.is_embedding_table(e)))
        matmul += static_cast<double>(entries[e].numel);
    flops[static_cast<size_t>(u)] = 6 * t * matmul + (u == model.head_unit() ? 0.0 : 12 * t * t * width(u));
  }
  return flops;
}

void check_pipeline_partition(const TrainingArguments& a, int stages, int blocks, const std::string& config_path) {
  if (stages > blocks)
    fail("pipeline_parallel_degree (partitions) is ", stages, " but the model has ", blocks, " layers (", config_path,
         "): every pipeline stage needs at least one layer");
  if (a.pipeline_partition.empty()) return;
  const int sum = std::accumulate(a.pipeline_partition.begin(), a.pipeline_partition.end(), 0);
  if (sum != blocks)
    fail("pipeline_partition gives ", sum, " blocks in all, but the model has ", blocks, " layers (", config_path,
         "): the stages' block counts must add up to the model's layers");
}

std::vector<int> partition_blocks(const Model<float>& model, const TrainingArguments& a, int stages,
                                  const std::string& config_path, std::string* how) {
  check_pipeline_partition(a, stages, model.num_blocks(), config_path);
  if (!a.pipeline_partition.empty()) {
    if (how) *how = "pipeline_partition";
    return a.pipeline_partition;
  }
  if (!a.auto_partition) {
    if (how) *how = "even split (auto_partition: false)";
    return dist::even_stages(model.num_blocks(), stages);
  }
  const std::vector<double> f = estimate_unit_flops(model, a.sequence_length());
  if (how) *how = cat("auto_partition: balanced by estimated FLOPs per unit at ", a.sequence_length(), " tokens");
  return dist::balance_stages(std::vector<double>(f.begin() + 1, f.end() - 1), stages, f.front(), f.back());
}

}  // namespace strata
