// The emulated GPU (kernels/emulated_gpu.h) itself: what it accepts, what it refuses, and that a
// host access to its memory stops the process at the access. CTest runs these with
// STRATA_EMULATED_GPU=1 (they skip without it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/device.h"
#include "kernels/emulated_gpu.h"
#include "kernels/ops.h"
#include "tensor/buffer.h"

namespace strata {
namespace {

class EmulatedGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kernels::emulated::enabled()) GTEST_SKIP() << "STRATA_EMULATED_GPU=1 not set";
    kernels::use_device(kernels::Device::cuda(0));
  }
  void TearDown() override { kernels::use_device(kernels::Device::cpu()); }
};

TEST_F(EmulatedGpu, IsOneGpuThatSaysWhatItIs) {
  EXPECT_EQ(kernels::cuda_device_count(), 1);
  EXPECT_EQ(kernels::cuda_unavailable_reason(), "");
  EXPECT_NE(kernels::describe_device(kernels::Device::cuda(0)).find("emulated GPU"), std::string::npos);
  EXPECT_THROW(kernels::use_device(kernels::Device::cuda(1)), std::runtime_error);
}

TEST_F(EmulatedGpu, OpsRunOnDeviceMemoryAndCopiesBringResultsBack) {
  Buffer<float> a(1000), b(1000), y(1000);
  EXPECT_TRUE(a.device().is_cuda());
  EXPECT_TRUE(kernels::emulated::in_device_memory(a.data()));
  std::vector<float> ha(1000), hb(1000), hy(1000);
  for (int i = 0; i < 1000; ++i) ha[i] = 0.5f * i, hb[i] = 3.0f - i;
  kernels::copy_bytes(a.data(), a.device(), ha.data(), kernels::Device::cpu(), 1000 * sizeof(float));
  kernels::copy_bytes(b.data(), b.device(), hb.data(), kernels::Device::cpu(), 1000 * sizeof(float));
  kernels::add(a.data(), b.data(), y.data(), 1000);
  kernels::copy_bytes(hy.data(), kernels::Device::cpu(), y.data(), y.device(), 1000 * sizeof(float));
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(hy[i], ha[i] + hb[i]) << i;
  // Growing keeps the contents, as on the CPU.
  y.resize(5000);
  kernels::copy_bytes(hy.data(), kernels::Device::cpu(), y.data(), y.device(), 1000 * sizeof(float));
  EXPECT_EQ(hy[999], ha[999] + hb[999]);
}

TEST_F(EmulatedGpu, NewMemoryIsGarbageNotZeros) {
  Buffer<float> a(64);
  std::vector<float> h(64, 0.0f);
  kernels::copy_bytes(h.data(), kernels::Device::cpu(), a.data(), a.device(), 64 * sizeof(float));
  for (float v : h) EXPECT_TRUE(std::isnan(v));
  a.zero();
  kernels::copy_bytes(h.data(), kernels::Device::cpu(), a.data(), a.device(), 64 * sizeof(float));
  for (float v : h) EXPECT_EQ(v, 0.0f);
}

TEST_F(EmulatedGpu, AnOpGivenHostMemoryNamesItselfAndTheArgument) {
  Buffer<float> x(16);
  std::vector<int32_t> host_ids(4, 0);
  Buffer<float> out(4 * 4);
  try {
    kernels::embedding_forward(host_ids.data(), x.data(), out.data(), 4, 4);
    FAIL() << "expected a refusal";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("kernels::embedding_forward: argument 1 is host memory"), std::string::npos)
        << e.what();
  }
}

TEST_F(EmulatedGpu, ACopyFromTheWrongSideIsRefused) {
  Buffer<float> d(8);
  std::vector<float> h(8);
  EXPECT_THROW(kernels::copy_bytes(h.data(), kernels::Device::cuda(0), d.data(), kernels::Device::cuda(0), 32),
               std::logic_error);
  EXPECT_THROW(kernels::copy_bytes(d.data(), kernels::Device::cpu(), h.data(), kernels::Device::cpu(), 32),
               std::logic_error);
}

TEST_F(EmulatedGpu, MemoryStatisticsCountTheDevicesAllocations) {
  const kernels::MemoryStats before = kernels::memory_stats(kernels::Device::cuda(0));
  { Buffer<float> a(1 << 20); }
  { Buffer<float> a(1 << 20); }  // the cached block again
  const kernels::MemoryStats after = kernels::memory_stats(kernels::Device::cuda(0));
  EXPECT_EQ(after.allocations - before.allocations, 2u);
  EXPECT_LE(after.system_allocations - before.system_allocations, 1u);
  EXPECT_EQ(after.in_use, before.in_use);
}

using EmulatedGpuDeathTest = EmulatedGpu;

TEST_F(EmulatedGpuDeathTest, AHostReadOfDeviceMemoryStopsTheProcessThere) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Buffer<float> a(16);
  a.zero();
  volatile float sink = 0;
  EXPECT_DEATH(sink = a[3], "host code touched device memory");
  EXPECT_DEATH(std::memset(a.data(), 0, 64), "host code touched device memory");
  (void)sink;
}

TEST_F(EmulatedGpuDeathTest, AnOpOnReservedMemoryThatIsNotBackedStopsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const size_t page = kernels::backing_granularity(kernels::Device::cuda(0)), n = 4 * page / sizeof(float);
  Buffer<float> b = Buffer<float>::reserved(n);
  kernels::back_memory(b.data(), page);
  kernels::fill(b.data(), page / sizeof(float), 1.0f);  // the backed page
  EXPECT_DEATH(kernels::fill(b.data(), n, 1.0f), "where it is not backed");
}

}  // namespace
}  // namespace strata
