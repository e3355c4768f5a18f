#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "dist/nccl/nccl_api.cuh"

namespace strata::dist::nccl {

namespace {

std::string library_name() {
  const char* path = std::getenv("STRATA_NCCL_LIBRARY");
  return path && *path ? path : "libnccl.so.2";
}

template <typename Fn>
void resolve(void* lib, const char* name, Fn* fn) {
  void* sym = dlsym(lib, name);
  if (!sym) throw std::runtime_error(library_name() + " has no symbol " + name + " (" + dlerror() + ")");
  *fn = reinterpret_cast<Fn>(sym);
}

}  // namespace

NcclApi open_nccl() {
  const std::string name = library_name();
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    throw std::runtime_error("cannot load " + name + " for the GPU collectives: " + dlerror() +
                             " (install NCCL 2, or set STRATA_NCCL_LIBRARY to its libnccl.so.2, e.g. PyTorch's "
                             "site-packages/nvidia/nccl/lib/libnccl.so.2)");
  NcclApi api{};
  resolve(lib, "ncclGetVersion", &api.GetVersion);
  resolve(lib, "ncclGetUniqueId", &api.GetUniqueId);
  resolve(lib, "ncclCommInitRank", &api.CommInitRank);
  resolve(lib, "ncclCommDestroy", &api.CommDestroy);
  resolve(lib, "ncclCommAbort", &api.CommAbort);
  resolve(lib, "ncclCommGetAsyncError", &api.CommGetAsyncError);
  resolve(lib, "ncclGetErrorString", &api.GetErrorString);
  resolve(lib, "ncclAllReduce", &api.AllReduce);
  resolve(lib, "ncclReduceScatter", &api.ReduceScatter);
  resolve(lib, "ncclAllGather", &api.AllGather);
  resolve(lib, "ncclReduce", &api.Reduce);
  resolve(lib, "ncclBroadcast", &api.Broadcast);
  resolve(lib, "ncclSend", &api.Send);
  resolve(lib, "ncclRecv", &api.Recv);
  resolve(lib, "ncclGroupStart", &api.GroupStart);
  resolve(lib, "ncclGroupEnd", &api.GroupEnd);
  return api;  // the library stays open for the process
}

const NcclApi& nccl_api() {
  static const NcclApi api = open_nccl();
  return api;
}

std::string nccl_library_description() {
  int v = 0;
  nccl_api().GetVersion(&v);
  // NCCL_VERSION(X, Y, Z) = X * 10000 + Y * 100 + Z since 2.9
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100) + " (" +
         library_name() + ")";
}

}  // namespace strata::dist::nccl
