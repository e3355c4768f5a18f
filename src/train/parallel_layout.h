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

// `config_path` names the model's config.json in errors.
void check_parallel_layout(const TrainingArguments& a, const ModelConfig& cfg, const std::string& config_path,
                           const dist::RankGrid& grid, const dist::Layout& layout);

}  // namespace strata
