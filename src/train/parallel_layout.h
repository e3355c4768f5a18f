// The parallel layout of a job, checked at its start before any work (before MPI starts, any
// data is read or any model is built): the degrees against the process count (the rank grid),
// against the model (partitions against layers, the tensor-parallel degree against heads and
// widths), SageMaker's mpi.processes_per_host against what the launcher started, and what this
// build cannot run yet. Every error names the option and the file it comes from.
#pragma once
#include <string>

#include "dist/communicator.h"
#include "dist/rank_grid.h"
#include "models/config.h"
#include "train/training_args.h"

namespace strata {

dist::RankGrid make_rank_grid(const TrainingArguments& a, const dist::Layout& layout);

// Whether the model can be split over `tp` tensor-parallel ranks (its architecture has the
// layers, and tp divides its heads, widths and vocabulary); errors name config_path.
void check_tensor_split(const ModelConfig& cfg, int tp, const std::string& config_path);

// `config_path` names the model's config.json in errors.
void check_parallel_layout(const TrainingArguments& a, const ModelConfig& cfg, const std::string& config_path,
                           const dist::RankGrid& grid, const dist::Layout& layout);

}  // namespace strata
