#include "train/device_choice.h"

#include "util/error.h"

namespace strata {

int gpu_of_local_rank(int local_rank, int local_world_size, int gpus) {
  if (local_world_size > gpus)
    fail(local_world_size, " ranks on this host and ", gpus, " GPU", gpus == 1 ? "" : "s",
         ": strata runs one process per GPU (NCCL refuses two ranks on one GPU). Start at most ", gpus,
         " rank", gpus == 1 ? "" : "s", " per host (strata launch -n ", gpus,
         ", distribution.mpi.processes_per_host, or an instance_type with as many GPUs), or set use_cpu: true");
  return local_rank;
}

kernels::Device training_device(const TrainingArguments& a, int local_rank, int local_world_size, int world_size) {
  const int gpus = a.use_cpu ? 0 : kernels::cuda_device_count();
  if (a.tf32 && gpus == 0)
    fail("tf32: TF32 products need an NVIDIA GPU (Ampere or newer), and ",
         a.use_cpu ? "use_cpu is set" : kernels::cuda_unavailable_reason(),
         ". Set tf32: false (fp32 products on the CPU are exact fp32)");
  if (gpus == 0) return kernels::Device::cpu();
  const kernels::Device gpu = kernels::Device::cuda(gpu_of_local_rank(local_rank, local_world_size, gpus));
  // One process per GPU trains alone for now: the Trainer's collectives are MPI's, on host
  // memory (the NCCL communicator, dist/nccl_communicator.h, is not wired into it yet).
  if (world_size > 1)
    fail(world_size, " ranks on ", gpu.str(), " (", kernels::device_properties(gpu).name,
         "): strata trains on one GPU per job for now (its collectives between GPUs, over NCCL, are not wired into "
         "the Trainer yet); run one process, or set use_cpu: true to train on the CPUs");
  return gpu;
}

}  // namespace strata
