#include "train/device_choice.h"

#include "util/error.h"

namespace strata {

bool gpu_per_rank(int local_world_size, int gpus) { return local_world_size <= gpus; }

int gpu_of_local_rank(int local_rank, int local_world_size, int gpus) {
  STRATA_CHECK(gpus > 0 && local_rank >= 0 && local_rank < local_world_size, "rank ", local_rank, " of ",
               local_world_size, " on a host with ", gpus, " GPUs");
  return local_rank % gpus;
}

kernels::Device training_device(const TrainingArguments& a, int local_rank, int local_world_size) {
  const int gpus = a.use_cpu ? 0 : kernels::cuda_device_count();
  if (a.tf32 && gpus == 0)
    fail("tf32: TF32 products need an NVIDIA GPU (Ampere or newer), and ",
         a.use_cpu ? "use_cpu is set" : kernels::cuda_unavailable_reason(),
         ". Set tf32: false (fp32 products on the CPU are exact fp32)");
  if (gpus == 0) return kernels::Device::cpu();
  return kernels::Device::cuda(gpu_of_local_rank(local_rank, local_world_size, gpus));
}

}  // namespace strata
