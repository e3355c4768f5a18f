// Reserve-and-map memory on a GPU (kernels/reserved_memory.h) over CUDA's virtual memory
// management: address space from cuMemAddressReserve, and per chunk a physical allocation
// (cuMemCreate, the recommended granularity: 2 MiB on H100) mapped into it (cuMemMap) with
// read-write access for this GPU (cuMemSetAccess). Each handle is released once mapped, so
// unmapping a chunk frees its memory. The driver API comes through the runtime
// (cudaGetDriverEntryPointByVersion): nothing links libcuda, and a machine without a driver
// runs the same binary on its CPU.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/virtual_memory.h"

namespace strata::kernels::cuda {

namespace {

struct Driver {
  PFN_cuGetErrorName_v6000 error_name = nullptr;
  PFN_cuMemGetAllocationGranularity_v10020 granularity = nullptr;
  PFN_cuMemAddressReserve_v10020 address_reserve = nullptr;
  PFN_cuMemAddressFree_v10020 address_free = nullptr;
  PFN_cuMemCreate_v10020 create = nullptr;
  PFN_cuMemMap_v10020 map = nullptr;
  PFN_cuMemSetAccess_v10020 set_access = nullptr;
  PFN_cuMemUnmap_v10020 unmap = nullptr;
  PFN_cuMemRelease_v10020 release = nullptr;
};

template <typename F>
void load(F& f, const char* name) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found{};
  STRATA_CUDA_CHECK(cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || !p)
    throw std::runtime_error(std::string("CUDA driver: no entry point ") + name + " (a driver for CUDA 12 or newer is needed)");
  f = reinterpret_cast<F>(p);
}

const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    load(r.error_name, "cuGetErrorName");
    load(r.granularity, "cuMemGetAllocationGranularity");
    load(r.address_reserve, "cuMemAddressReserve");
    load(r.address_free, "cuMemAddressFree");
    load(r.create, "cuMemCreate");
    load(r.map, "cuMemMap");
    load(r.set_access, "cuMemSetAccess");
    load(r.unmap, "cuMemUnmap");
    load(r.release, "cuMemRelease");
    return r;
  }();
  return d;
}

void check(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const char* name = "unknown";
  driver().error_name(r, &name);
  throw std::runtime_error(std::string("CUDA driver error ") + name + " (" + std::to_string(static_cast<int>(r)) +
                           ") in " + call);
}

CUdeviceptr address(void* p) { return reinterpret_cast<CUdeviceptr>(p); }

}  // namespace

std::unique_ptr<ReservedMemory> make_reserved_memory(int device, void* compute, CachingAllocator& allocator) {
  const Driver& d = driver();
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  size_t granularity = 0;
  check(d.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), "cuMemGetAllocationGranularity");
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;

  ReservedMemory::System s;
  s.granularity = granularity;
  s.reserve = [granularity](size_t bytes) -> void* {
    CUdeviceptr p = 0;
    if (driver().address_reserve(&p, bytes, granularity, 0, 0) != CUDA_SUCCESS) return nullptr;
    return reinterpret_cast<void*>(p);
  };
  s.unreserve = [](void* p, size_t bytes) { check(driver().address_free(address(p), bytes), "cuMemAddressFree"); };
  s.map = [device, prop, access, granularity, &allocator](void* chunk) {
    CUmemGenericAllocationHandle handle{};
    CUresult r = driver().create(&handle, granularity, &prop, 0);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {  // the caching allocator's free blocks may make room
      STRATA_CUDA_CHECK(cudaSetDevice(device));
      STRATA_CUDA_CHECK(cudaDeviceSynchronize());
      allocator.empty_cache();
      r = driver().create(&handle, granularity, &prop, 0);
    }
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return false;
    check(r, "cuMemCreate");
    check(driver().map(address(chunk), granularity, 0, handle, 0), "cuMemMap");
    check(driver().release(handle), "cuMemRelease");  // the mapping keeps the memory until unmapped
    check(driver().set_access(address(chunk), granularity, &access, 1), "cuMemSetAccess");
    return true;
  };
  s.unmap = [granularity](void* chunk) { check(driver().unmap(address(chunk), granularity), "cuMemUnmap"); };
  // Called from the gradient reducer's thread too, whose current device is the runtime's default
  // until set: each call that goes through the runtime names the GPU first.
  s.zero = [device, compute](void* p, size_t bytes) {
    STRATA_CUDA_CHECK(cudaSetDevice(device));
    STRATA_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, static_cast<cudaStream_t>(compute)));
  };
  // Kernels on any stream (a collective's, the copy stream) may still use a chunk given back.
  s.wait_idle = [device] {
    STRATA_CUDA_CHECK(cudaSetDevice(device));
    STRATA_CUDA_CHECK(cudaDeviceSynchronize());
  };
  s.account = [&allocator](std::ptrdiff_t bytes) { allocator.note_external(bytes); };
  return std::make_unique<ReservedMemory>(std::move(s));
}

}  // namespace strata::kernels::cuda
