// The device seam's host-side logic (kernels/device.h): device names, the refusal of a GPU
// that is not there, the CPU's memory statistics, Buffer on a device, and the caching
// allocator the GPU uses, run here over the host heap.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/caching_allocator.h"
#include "kernels/device.h"
#include "tensor/buffer.h"
#include "test_util_fs.h"
#include "train/device_choice.h"
#include "train/training_args.h"
#include "util/error.h"

namespace strata {
namespace {

using kernels::CachingAllocator;
using kernels::Device;

TEST(Device, ParsesPyTorchSpellings) {
  Device d;
  ASSERT_TRUE(kernels::parse_device("cpu", &d));
  EXPECT_EQ(d, Device::cpu());
  ASSERT_TRUE(kernels::parse_device("cuda", &d));
  EXPECT_EQ(d, Device::cuda(0));
  ASSERT_TRUE(kernels::parse_device("cuda:3", &d));
  EXPECT_EQ(d, Device::cuda(3));
  EXPECT_EQ(d.str(), "cuda:3");
  EXPECT_EQ(Device::cpu().str(), "cpu");
  for (const char* bad : {"", "gpu", "cuda:", "cuda:x", "cuda:-1", "CPU", "cuda:12345"})
    EXPECT_FALSE(kernels::parse_device(bad, &d)) << bad;
}

TEST(Device, TheCpuIsCurrentUntilAGpuIsChosen) {
  EXPECT_EQ(kernels::current_device(), Device::cpu());
  EXPECT_FALSE(kernels::on_cuda());
  const std::string line = kernels::describe_device(Device::cpu());
  EXPECT_EQ(line.rfind("cpu ", 0), 0u) << line;
  EXPECT_NE(line.find("GiB"), std::string::npos) << line;
  EXPECT_GT(kernels::device_properties(Device::cpu()).total_memory, 0u);
}

TEST(Device, AGpuThatIsNotThereIsRefusedWithTheReason) {
  if (kernels::cuda_device_count() > 0) GTEST_SKIP() << "this machine has a GPU";
  const std::string why = kernels::cuda_unavailable_reason();
  EXPECT_FALSE(why.empty());
  try {
    kernels::use_device(Device::cuda(0));
    FAIL() << "use_device(cuda:0) accepted without a GPU";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:0 asked for, but " + why), std::string::npos) << e.what();
  }
  EXPECT_EQ(kernels::current_device(), Device::cpu());  // unchanged by the refusal
}

TEST(Device, CpuMemoryStatisticsFollowBuffers) {
  const Device cpu = Device::cpu();
  const kernels::MemoryStats before = kernels::memory_stats(cpu);
  {
    Buffer<float> b(1000);
    const kernels::MemoryStats during = kernels::memory_stats(cpu);
    EXPECT_EQ(during.in_use, before.in_use + 1000 * sizeof(float));
    EXPECT_EQ(during.allocations, before.allocations + 1);
    EXPECT_GE(during.peak_in_use, during.in_use);
    b.resize(10);  // smaller: no allocation
    b.resize(1000);
    EXPECT_EQ(kernels::memory_stats(cpu).allocations, before.allocations + 1);
  }
  EXPECT_EQ(kernels::memory_stats(cpu).in_use, before.in_use);
}

TEST(Device, BufferKeepsItsContentWhenItGrowsAndZeroes) {
  Buffer<double> b(5, Device::cpu());
  EXPECT_EQ(b.device(), Device::cpu());
  for (size_t i = 0; i < 5; ++i) b[i] = 1.5 * static_cast<double>(i);
  b.resize(1 << 16);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(b[i], 1.5 * static_cast<double>(i));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
  b.zero();
  for (size_t i = 0; i < b.size(); i += 997) EXPECT_EQ(b[i], 0.0);
  Buffer<double> moved = std::move(b);
  EXPECT_EQ(moved.size(), size_t{1} << 16);
  EXPECT_EQ(b.size(), 0u);  // NOLINT(bugprone-use-after-move): a moved-from buffer is empty
}

TEST(Device, CopiesAndEventsOnTheCpuAreImmediate) {
  std::vector<int> a{1, 2, 3, 4}, b(4, 0);
  kernels::copy_bytes(b.data(), Device::cpu(), a.data(), Device::cpu(), 4 * sizeof(int));
  EXPECT_EQ(a, b);
  kernels::Event e;
  e.record(kernels::compute_stream());
  e.wait(kernels::copy_stream());
  EXPECT_TRUE(e.done());
  e.synchronize();
  kernels::synchronize();
}

// A host "system" that counts its calls, and refuses past `limit` bytes held.
struct CountingSystem {
  int allocs = 0, frees = 0;
  size_t limit = SIZE_MAX, held = 0;
  std::map<void*, size_t> live;
  CachingAllocator::System system() {
    return {[this](size_t bytes) -> void* {
              if (held + bytes > limit) return nullptr;
              void* p = std::malloc(bytes);
              ++allocs;
              held += bytes;
              live.emplace(p, bytes);
              return p;
            },
            [this](void* p, size_t bytes) {
              ++frees;
              EXPECT_EQ(bytes, live.at(p)) << "freed with another size than it was allocated with";
              held -= live.at(p);
              live.erase(p);
              std::free(p);
            }};
  }
};

TEST(CachingAllocator, RoundsSmallTo512BytesAndLargeTo2MiB) {
  EXPECT_EQ(CachingAllocator::round_size(0), 512u);
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::round_size(1 << 20), size_t{1} << 20);
  EXPECT_EQ(CachingAllocator::round_size((1 << 20) + 1), size_t{2} << 20);
  EXPECT_EQ(CachingAllocator::round_size((size_t{5} << 20) + 7), size_t{6} << 20);
}

TEST(CachingAllocator, ASecondStepOfTheSameSizesReachesTheSystemNoMore) {
  CountingSystem sys;
  CachingAllocator a(sys.system());
  const std::vector<size_t> step_sizes{100, 4096, 3 << 20, 100, 777};
  for (int step = 0; step < 3; ++step) {
    std::vector<void*> blocks;
    for (size_t s : step_sizes) {
      void* p = a.allocate(s);
      ASSERT_NE(p, nullptr);
      std::memset(p, step, s);  // the whole size is usable
      blocks.push_back(p);
    }
    for (void* p : blocks) a.deallocate(p);
    EXPECT_EQ(sys.allocs, 5) << "step " << step;
  }
  const kernels::MemoryStats s = a.stats();
  EXPECT_EQ(s.allocations, 15u);
  EXPECT_EQ(s.system_allocations, 5u);
  EXPECT_EQ(s.in_use, 0u);
  EXPECT_EQ(s.reserved, 512u + 4096u + (4u << 20) + 512u + 1024u);
  EXPECT_EQ(s.peak_in_use, s.reserved);
  a.empty_cache();
  EXPECT_EQ(sys.frees, 5);
  EXPECT_EQ(a.stats().reserved, 0u);
  EXPECT_TRUE(sys.live.empty());
}

TEST(CachingAllocator, AnotherSizeIsNotServedFromTheCache) {
  CountingSystem sys;
  CachingAllocator a(sys.system());
  a.deallocate(a.allocate(1000));
  void* p = a.allocate(5000);  // a cached 1024-byte block does not fit
  EXPECT_EQ(sys.allocs, 2);
  a.deallocate(p);
  a.reset_peak();
  EXPECT_EQ(a.stats().peak_in_use, 0u);
}

TEST(CachingAllocator, WhenTheSystemIsFullTheCacheIsEmptiedAndTriedAgain) {
  CountingSystem sys;
  sys.limit = 8 << 20;
  CachingAllocator a(sys.system());
  void* big = a.allocate(5 << 20);  // 6 MiB reserved
  a.deallocate(big);                // cached
  void* other = a.allocate(3 << 20);  // 4 MiB: does not fit beside the cached 6 MiB
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(sys.frees, 1);  // the cached block went back first
  EXPECT_EQ(a.allocate(5 << 20), nullptr);  // truly full: null, not an exception
  a.deallocate(other);
}

TEST(CachingAllocator, ItsDestructorReturnsEverything) {
  CountingSystem sys;
  {
    CachingAllocator a(sys.system());
    a.deallocate(a.allocate(10));  // cached when the allocator goes
    a.allocate(2000);               // still in use
  }
  EXPECT_EQ(sys.allocs, 2);
  EXPECT_EQ(sys.frees, 2);
  EXPECT_TRUE(sys.live.empty());
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

TrainingArguments args_from(const std::string& yaml) {
  return parse_training_arguments("model_name_or_path: m\noutput_dir: o\ntrain_file: t.jsonl\n" + yaml, "job.yaml");
}

TEST(TrainingDevice, HfDeviceArgumentsAreReadWithTheirOlderName) {
  EXPECT_FALSE(args_from("").use_cpu);
  EXPECT_TRUE(args_from("use_cpu: true\n").use_cpu);
  EXPECT_TRUE(args_from("no_cuda: true\n").use_cpu);  // HF's deprecated spelling
  EXPECT_TRUE(args_from("tf32: true\n").tf32);
}

TEST(TrainingDevice, TheCpuUnderUseCpuOrWithoutAGpu) {
  EXPECT_EQ(training_device(args_from("use_cpu: true\n"), 0, 1), kernels::Device::cpu());
  // CPU ranks: as many per host as asked
  if (kernels::cuda_device_count() == 0) EXPECT_EQ(training_device(args_from(""), 1, 8), kernels::Device::cpu());
}

// One process per GPU: rank i of the host takes GPU i; more ranks than GPUs share them
// round-robin (and then cannot use NCCL).
TEST(TrainingDevice, EachRankOfAHostTakesAGpuOfItsOwnOrSharesThemInTurn) {
  EXPECT_EQ(gpu_of_local_rank(0, 1, 1), 0);
  EXPECT_EQ(gpu_of_local_rank(3, 4, 8), 3);
  EXPECT_TRUE(gpu_per_rank(4, 8));
  EXPECT_TRUE(gpu_per_rank(8, 8));
  EXPECT_EQ(gpu_of_local_rank(1, 8, 1), 0);
  EXPECT_EQ(gpu_of_local_rank(5, 8, 2), 1);
  EXPECT_EQ(gpu_of_local_rank(6, 8, 2), 0);
  EXPECT_FALSE(gpu_per_rank(8, 2));
}

void expect_tf32_refused(const std::string& yaml) {
  try {
    training_device(args_from(yaml), 0, 1);
    FAIL() << "accepted: " << yaml;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tf32: TF32 products need an NVIDIA GPU"), std::string::npos) << e.what();
  }
}

TEST(TrainingDevice, Tf32WithoutAGpuIsRefusedAsHfRefusesIt) {
  expect_tf32_refused("tf32: true\nuse_cpu: true\n");
  if (kernels::cuda_device_count() == 0) expect_tf32_refused("tf32: true\n");
}

}  // namespace
}  // namespace strata
