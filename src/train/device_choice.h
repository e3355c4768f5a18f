// HF's device arguments resolved for this process (TrainingArguments: use_cpu, its older name
// no_cuda, and tf32): as HF's Trainer, the GPU is used when there is one.
#pragma once
#include "kernels/device.h"
#include "train/training_args.h"

namespace strata {

// The device a rank trains on: the CPU under use_cpu or where no GPU is found, else the GPU of
// this rank's index among the ranks on its host. Refused, saying what was found and what to
// set, where the arguments ask for something this machine or build cannot do: tf32 without a
// GPU (as HF refuses it), more ranks on the host than it has GPUs, or more than one rank on
// GPUs (their NCCL collectives are not wired into the Trainer yet).
kernels::Device training_device(const TrainingArguments& a, int local_rank, int local_world_size, int world_size);

// The GPU of rank `local_rank` of `local_world_size` on a host with `gpus` GPUs (the ones
// CUDA_VISIBLE_DEVICES leaves): one process per GPU, so more ranks than GPUs is an error.
int gpu_of_local_rank(int local_rank, int local_world_size, int gpus);

}  // namespace strata
