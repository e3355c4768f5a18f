#include <omp.h>

#include <cblas-openblas.h>

#include "kernels/ops.h"

namespace strata::kernels {

void set_num_threads(int n) {
  if (n <= 0) n = omp_get_num_procs();
  // OpenBLAS stays single-threaded: its threaded GEMM rounds differently for different
  // thread counts. gemm() splits the work into fixed tiles across OpenMP threads instead.
  openblas_set_num_threads(1);
  omp_set_num_threads(n);
  // A parallel region inside another runs on the thread that meets it (replica threads,
  // train/pipeline_step.h, rely on it), whatever OMP_NESTED or OMP_MAX_ACTIVE_LEVELS say.
  omp_set_max_active_levels(1);
}

int num_threads() { return omp_get_max_threads(); }

}  // namespace strata::kernels
