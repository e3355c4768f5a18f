// How many blocks each pipeline stage runs, before any work:
//   pipeline_partition: [a, b, ...]  as given (strata's explicit form; it must cover the blocks)
//   auto_partition: true             balanced by estimated training FLOPs per unit (below)
//   auto_partition: false            an even split (the first stages take the remainder)
// The estimate, not a timing, so that every rank computes the same partition without talking
// and a job is partitioned the same way every time.
#pragma once
#include <string>
#include <vector>

#include "models/model.h"
#include "train/training_args.h"

namespace strata {

// Estimated floating-point operations of one training step (forward and backward) through each
// unit for one sequence of T tokens, from the parameter table: each 2-D parameter a block or the
// head reads is a matrix product's weight (2 T x its size in forward, twice that in backward),
// but for the embedding tables a block gathers from; each block also multiplies attention
// scores and values (4 T^2 x hidden in forward, twice that in backward; an encoder-decoder's
// decoder blocks attend twice, at targets as long as sources); the embeddings gather and
// scatter rows (a few T x hidden). Elementwise work (layer norms, GELU, softmax) is left out:
// it is small beside the products.
std::vector<double> estimate_unit_flops(const Model<float>& model, int T);

// The checks that need only the block count, before any work: at least one block per stage,
// pipeline_partition adding up to the model's blocks. `config_path` names the model's config.json.
void check_pipeline_partition(const TrainingArguments& a, int stages, int blocks, const std::string& config_path);

// Blocks per stage for `stages` stages (after check_pipeline_partition). `how` (if given) says which rule decided, for the
// banner.
std::vector<int> partition_blocks(const Model<float>& model, const TrainingArguments& a, int stages,
                                  const std::string& config_path, std::string* how = nullptr);

}  // namespace strata
