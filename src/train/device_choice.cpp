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

kernels::Device training_device(const TrainingArguments& a, int local_rank, int local_world_size) {
  const int gpus = a.use_cpu ? 0 : kernels::cuda_device_count();
  if (a.tf32 && gpus == 0)
    fail("tf32: TF32 products need an NVIDIA GPU (Ampere or newer), and ",
         a.use_cpu ? "use_cpu is set" : kernels::cuda_unavailable_reason(),
         ". Set tf32: false (fp32 products on the CPU are exact fp32)");
  if (gpus == 0) return kernels::Device::cpu();
  const kernels::Device gpu = kernels::Device::cuda(gpu_of_local_rank(local_rank, local_world_size, gpus));
  // The kernels run on a GPU (kernels/cuda/), but the models still read and write their
  // batches, weights and outputs from the host (issue 25, item 3): refuse instead of faulting.
  fail(gpu.str(), " found (", kernels::device_properties(gpu).name,
       "), but strata's models do not train on a GPU yet; set use_cpu: true to train on the CPU");
}

}  // namespace strata
