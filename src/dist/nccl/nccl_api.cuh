// NCCL, opened on first use instead of linked, as cuBLASLt is (kernels/cuda/cublaslt_api.cuh):
// a CUDA build runs on machines without NCCL, and on the GPU machine the library comes from
// PyTorch's wheel (nvidia-nccl-cu13), which is not on the loader's path.
#pragma once
#include <nccl.h>

#include <string>

namespace strata::dist::nccl {

// The NCCL functions the communicator calls, with their own signatures.
struct NcclApi {
  decltype(&ncclGetVersion) GetVersion;
  decltype(&ncclGetUniqueId) GetUniqueId;
  decltype(&ncclCommInitRank) CommInitRank;
  decltype(&ncclCommDestroy) CommDestroy;
  decltype(&ncclCommAbort) CommAbort;
  decltype(&ncclCommGetAsyncError) CommGetAsyncError;
  decltype(&ncclGetErrorString) GetErrorString;
  decltype(&ncclAllReduce) AllReduce;
  decltype(&ncclReduceScatter) ReduceScatter;
  decltype(&ncclAllGather) AllGather;
  decltype(&ncclReduce) Reduce;
  decltype(&ncclBroadcast) Broadcast;
  decltype(&ncclSend) Send;
  decltype(&ncclRecv) Recv;
  decltype(&ncclGroupStart) GroupStart;
  decltype(&ncclGroupEnd) GroupEnd;
};

// Opens libnccl.so.2: STRATA_NCCL_LIBRARY (a path) when set, else the loader's search path.
// Throws std::runtime_error naming the library or the missing symbol.
NcclApi open_nccl();
// The process's NCCL, opened by the first call.
const NcclApi& nccl_api();
// Where it was found, and its version ("2.28.3 (libnccl.so.2)"); throws as nccl_api().
std::string nccl_library_description();

}  // namespace strata::dist::nccl
