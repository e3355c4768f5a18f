// The distribution options of a job YAML, read into TrainingArguments:
//
//   distribution:                 the SageMaker Estimator's `distribution` dict
//     smdistributed:
//       modelparallel: {enabled: true, parameters: {partitions: 2, microbatches: 4, ...}}
//       dataparallel: {enabled: true}
//     mpi: {enabled: true, processes_per_host: 8}
//   deepspeed: {zero_optimization: {stage: 2}}   HF TrainingArguments' `deepspeed` (a mapping,
//                                                or the path of a DeepSpeed JSON config):
//                                                strata reads its ZeRO stage only
//
// and the checks of the parallel options that need neither the model nor the process count.
// The checks that do (degrees against the world size, partitions against the layers) run at
// the start of the job: parallel_layout.h. docs/parallelism.md lists every key.
#pragma once
#include <string>

#include "train/training_args.h"

namespace strata {

// `src` names the YAML file in errors, which add the line of the offending key.
void read_distribution(TrainingArguments& a, const YAML::Node& distribution, const std::string& src);
void read_deepspeed(TrainingArguments& a, const YAML::Node& deepspeed, const std::string& src);
void validate_parallel_arguments(const TrainingArguments& a, const std::string& src);

}  // namespace strata
