// HF's device arguments resolved for this process (TrainingArguments: use_cpu, its older name
// no_cuda, and tf32): as HF's Trainer, the GPU is used when there is one.
#pragma once
#include "kernels/device.h"
#include "train/training_args.h"

namespace strata {

// The device a rank trains on: the CPU under use_cpu or where no GPU is found, else the GPU of
// this rank's index among the ranks on its host (local_rank modulo the GPUs there). Refused,
// saying what was found and what to set, where the arguments ask for something this machine or
// build cannot do: tf32 without a GPU (as HF refuses it), or a GPU before strata's models run
// on one.
kernels::Device training_device(const TrainingArguments& a, int local_rank);

}  // namespace strata
