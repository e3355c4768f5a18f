// The host side of the NCCL communicator, on any machine with a CUDA build: the library is
// opened on demand (and named when it cannot be), and without a GPU a communicator is refused
// saying why. Its collectives run on a GPU only: tests/gpu/test_device_communicators.cpp.
#ifdef STRATA_WITH_CUDA
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "dist/communicator.h"
#include "dist/nccl/nccl_api.cuh"
#include "dist/nccl_communicator.h"
#include "kernels/device.h"
#include "test_util_fs.h"
#include "util/error.h"

namespace strata {
namespace {

bool nccl_installed() {
  void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (lib) dlclose(lib);
  return lib != nullptr;
}

TEST(NcclLibrary, OpensOnDemandWithEverySymbol) {
  if (!nccl_installed()) GTEST_SKIP() << "no libnccl.so.2 on this machine";
  const std::string d = dist::nccl::nccl_library_description();
  EXPECT_EQ(d.rfind("2.", 0), 0u) << d;  // NCCL 2.x
  EXPECT_NE(d.find("libnccl.so.2"), std::string::npos) << d;
}

TEST(NcclLibrary, AMissingLibraryIsNamedWithWhereToFindOne) {
  setenv("STRATA_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  try {
    dist::nccl::open_nccl();
    ADD_FAILURE() << "a library that does not exist was opened";
  } catch (const std::exception& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cannot load /nonexistent/libnccl.so.2"), std::string::npos) << m;
    EXPECT_NE(m.find("STRATA_NCCL_LIBRARY"), std::string::npos) << m;
  }
  unsetenv("STRATA_NCCL_LIBRARY");
}

TEST(NcclCommunicator, WithoutAGpuIsRefusedSayingWhy) {
  if (kernels::cuda_device_count() > 0) GTEST_SKIP() << "this machine has a GPU (tests/gpu covers it)";
  EXPECT_NE(dist::nccl_unavailable_reason().find("no GPU"), std::string::npos);
  test::expect_error([] { dist::make_nccl_communicator(dist::make_single_process_communicator(), 60); },
                     {"NCCL collectives: no GPU"});
}

}  // namespace
}  // namespace strata
#endif
