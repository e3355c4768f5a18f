// The `strata job` subcommands that look at or act on an existing job (cmd_job_inspect.cpp),
// declared on the `job` command with what runs each.
#pragma once
#include <map>
#include <string>

#include "cli/commands.h"
#include "models/memory_estimate.h"
#include "train/training_args.h"

namespace strata::cli {

void define_job_inspection(CLI::App& job, std::map<const CLI::App*, Run>& runs);

// The memory estimate `strata info` prints, for a job's model, batch and sequence length.
MemoryEstimate memory_per_rank(const TrainingArguments& a);

// This executable's path: what the ranks of a job (and the cells of a study) run.
std::string self_binary();

}  // namespace strata::cli
