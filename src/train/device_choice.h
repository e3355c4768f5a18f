// HF's device arguments resolved for this process (TrainingArguments: use_cpu, its older name
// no_cuda, and tf32): as HF's Trainer, the GPU is used when there is one.
#pragma once
#include "kernels/device.h"
#include "train/training_args.h"

namespace strata {

// The device a rank trains on: the CPU under use_cpu or where no GPU is found, else the GPU of
// this rank's index among the ranks on its host. Refused, saying what was found and what to
// set, where the arguments ask for something this machine or build cannot do (tf32 without a
// GPU, as HF refuses it).
kernels::Device training_device(const TrainingArguments& a, int local_rank, int local_world_size);

// The GPU of rank `local_rank` of `local_world_size` on a host with `gpus` GPUs (the ones
// CUDA_VISIBLE_DEVICES leaves): GPU i for rank i, one process per GPU. More ranks than GPUs
// share them round-robin (rank i on GPU i mod gpus); their collectives then go through host
// memory, not NCCL (dist/gpu_collectives.h), which is for tests and small jobs.
int gpu_of_local_rank(int local_rank, int local_world_size, int gpus);

// Whether each rank on this host has a GPU of its own.
bool gpu_per_rank(int local_world_size, int gpus);

}  // namespace strata
