// Collectives on GPU buffers carried through host memory by another communicator (MPI): what
// GPU ranks use where NCCL cannot serve them (issue 27), that is ranks that share one GPU
// (NCCL refuses two ranks on a device) and the emulated GPU (kernels/emulated_gpu.h), whose
// processes each see a GPU of their own that NCCL has never heard of. Each call whose buffer is
// device memory copies it to a host buffer (after the work queued on the compute stream, as
// every seam copy is ordered), runs the same call of `inner` on that buffer, and copies the
// result back; host buffers go to `inner` as they are. Results are `inner`'s bit for bit, so
// GPU ranks reduce in the same order as CPU ranks do.
//
// It costs two copies over PCIe per collective on a real GPU: fine for sharing one GPU in
// tests, not a way to train on many (NCCL is: dist/nccl_communicator.h).
#pragma once
#include <memory>

#include "dist/communicator.h"

namespace strata::dist {

std::unique_ptr<Communicator> make_staged_communicator(std::unique_ptr<Communicator> inner);

}  // namespace strata::dist
