// kernels/reserved_memory.h: its books over a system that records what it is asked (which
// chunks get backed, zeroed and given back, and what is refused), then a reserved Buffer on the
// emulated GPU (CTest sets STRATA_EMULATED_GPU=1) and on a real one (label gpu; skipped
// without one). An op on a chunk that is not backed: test_emulated_gpu.cpp's death test.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

#include "kernels/device.h"
#include "kernels/emulated_gpu.h"
#include "kernels/ops.h"
#include "kernels/reserved_memory.h"
#include "tensor/buffer.h"

namespace strata::kernels {
namespace {

constexpr size_t kChunk = 64;

// A system over a host array: "mapping" a chunk marks it, zeroing writes zeros.
struct FakeSystem {
  alignas(kChunk) unsigned char memory[16 * kChunk];
  std::set<uintptr_t> mapped;
  size_t map_calls = 0, waits = 0, room = 1000;
  std::ptrdiff_t accounted = 0;
  bool reserved = false;

  ReservedMemory::System system() {
    ReservedMemory::System s;
    s.granularity = kChunk;
    s.reserve = [this](size_t bytes) -> void* {
      if (reserved || bytes > sizeof memory) return nullptr;
      reserved = true;
      return memory;
    };
    s.unreserve = [this](void*, size_t) { reserved = false; };
    s.map = [this](void* chunk) {
      if (mapped.size() == room) return false;
      ++map_calls;
      std::fill_n(static_cast<unsigned char*>(chunk), kChunk, 0xAB);  // garbage, as cuMemCreate's
      return mapped.insert(reinterpret_cast<uintptr_t>(chunk)).second;
    };
    s.unmap = [this](void* chunk) { EXPECT_EQ(mapped.erase(reinterpret_cast<uintptr_t>(chunk)), 1u); };
    s.zero = [](void* p, size_t bytes) { std::fill_n(static_cast<unsigned char*>(p), bytes, 0); };
    s.wait_idle = [this] { ++waits; };
    s.account = [this](std::ptrdiff_t bytes) { accounted += bytes; };
    return s;
  }
  bool is_mapped(size_t chunk) const { return mapped.count(reinterpret_cast<uintptr_t>(memory + chunk * kChunk)); }
};

TEST(ReservedMemory, BacksTheChunksARangeTouchesZeroedAndCountsThem) {
  FakeSystem f;
  ReservedMemory r(f.system());
  auto* p = static_cast<unsigned char*>(r.reserve(10 * kChunk - 5));  // rounded up to 10 chunks
  ASSERT_EQ(p, f.memory);
  EXPECT_TRUE(r.contains(p + 10 * kChunk - 1));
  EXPECT_FALSE(r.contains(p + 10 * kChunk));
  EXPECT_EQ(r.backed_bytes(p, 10 * kChunk), 0u);
  r.back(p + kChunk + 10, kChunk);  // touches chunks 1 and 2
  EXPECT_TRUE(f.is_mapped(1) && f.is_mapped(2));
  EXPECT_EQ(f.mapped.size(), 2u);
  for (size_t i = kChunk; i < 3 * kChunk; ++i) ASSERT_EQ(p[i], 0) << i;  // backed memory reads as zero
  p[2 * kChunk] = 7;
  r.back(p + 2 * kChunk, 1);  // backed already: kept as it is
  EXPECT_EQ(f.map_calls, 2u);
  EXPECT_EQ(p[2 * kChunk], 7);
  EXPECT_EQ(r.backed_bytes(p, 10 * kChunk), 2 * kChunk);
  EXPECT_EQ(r.backed_bytes(p + 2 * kChunk + 3, 1), kChunk);  // whole chunks, as mincore counts pages
  EXPECT_EQ(r.backed_total(), 2 * kChunk);
  EXPECT_EQ(f.accounted, static_cast<std::ptrdiff_t>(2 * kChunk));
}

TEST(ReservedMemory, ReleaseGivesBackWholeChunksAndZeroesTheEnds) {
  FakeSystem f;
  ReservedMemory r(f.system());
  auto* p = static_cast<unsigned char*>(r.reserve(8 * kChunk));
  r.back(p, 8 * kChunk);
  std::fill_n(p, 8 * kChunk, 1);
  // From the middle of chunk 1 to the middle of chunk 5: 2, 3 and 4 are given back, the
  // released bytes of 1 and 5 zeroed, their other bytes kept.
  r.release(p + kChunk + kChunk / 2, 4 * kChunk);
  EXPECT_EQ(f.waits, 1u);  // once, before the first unmap
  for (size_t c : {0, 1, 5, 6, 7}) EXPECT_TRUE(f.is_mapped(c)) << c;
  for (size_t c : {2, 3, 4}) EXPECT_FALSE(f.is_mapped(c)) << c;
  EXPECT_EQ(p[kChunk + kChunk / 2 - 1], 1);
  EXPECT_EQ(p[kChunk + kChunk / 2], 0);
  EXPECT_EQ(p[5 * kChunk + kChunk / 2 - 1], 0);
  EXPECT_EQ(p[5 * kChunk + kChunk / 2], 1);
  EXPECT_EQ(r.backed_bytes(p, 8 * kChunk), 5 * kChunk);
  EXPECT_EQ(f.accounted, static_cast<std::ptrdiff_t>(5 * kChunk));
  // Backed again, a released chunk reads as zero.
  r.back(p + 3 * kChunk, 1);
  EXPECT_EQ(p[3 * kChunk], 0);
  // A release inside one chunk gives nothing back and waits for nothing.
  r.release(p + 10, 5);
  EXPECT_EQ(f.waits, 1u);
  EXPECT_EQ(p[9], 1);
  EXPECT_EQ(p[10], 0);
  // Releasing what is not backed costs nothing.
  r.release(p + 2 * kChunk, kChunk);
  EXPECT_EQ(f.waits, 1u);
}

TEST(ReservedMemory, FreeGivesBackEverythingAndBadRangesAreRefused) {
  FakeSystem f;
  {
    ReservedMemory r(f.system());
    auto* p = static_cast<unsigned char*>(r.reserve(4 * kChunk));
    r.back(p, 3 * kChunk);
    EXPECT_THROW(r.back(p + 3 * kChunk, 2 * kChunk), std::logic_error);  // runs past the end
    EXPECT_THROW(r.back(p + 4 * kChunk, 1), std::logic_error);           // in no reservation
    EXPECT_THROW(r.free(p + kChunk), std::logic_error);                  // not its start
    r.free(p);
    EXPECT_TRUE(f.mapped.empty());
    EXPECT_FALSE(f.reserved);
    EXPECT_EQ(f.accounted, 0);
    EXPECT_EQ(r.backed_bytes(p, kChunk), 0u);  // in no reservation now
    r.reserve(kChunk);                          // freed by the destructor
  }
  EXPECT_FALSE(f.reserved);
}

TEST(ReservedMemory, ADeviceOutOfMemorySaysSoAndKeepsWhatItBacked) {
  FakeSystem f;
  f.room = 2;
  ReservedMemory r(f.system());
  auto* p = static_cast<unsigned char*>(r.reserve(4 * kChunk));
  EXPECT_THROW(r.back(p, 4 * kChunk), std::bad_alloc);
  EXPECT_EQ(r.backed_bytes(p, 4 * kChunk), 2 * kChunk);  // the books follow what was mapped
  f.room = 4;
  r.back(p, 4 * kChunk);
  EXPECT_EQ(r.backed_bytes(p, 4 * kChunk), 4 * kChunk);
  FakeSystem g;
  ReservedMemory::System odd = g.system();
  odd.granularity = 48;
  EXPECT_THROW(ReservedMemory{odd}, std::logic_error);
}

// On the current GPU: a reserved buffer costs nothing until backed, a window of it is backed
// zeroed, written by an op and counted in the device's statistics, a copy or a zeroing backs
// what it writes, and a release gives the whole chunks back, to read as zero when backed again.
void check_reserved_buffer_on_current_gpu() {
  const Device gpu = current_device();
  const size_t chunk = backing_granularity(gpu), n = 64 * chunk / sizeof(float);
  const size_t in_use = memory_stats(gpu).in_use;
  Buffer<float> b = Buffer<float>::reserved(n);
  EXPECT_TRUE(is_device_memory(b.data()));
  EXPECT_EQ(resident_bytes(b.data(), n * sizeof(float)), 0u);
  EXPECT_EQ(memory_stats(gpu).in_use, in_use);
  const size_t lo = 8 * chunk / sizeof(float), hi = 24 * chunk / sizeof(float);
  back_memory(b.data() + lo, (hi - lo) * sizeof(float));
  EXPECT_EQ(resident_bytes(b.data(), n * sizeof(float)), 16 * chunk);
  EXPECT_EQ(memory_stats(gpu).in_use, in_use + 16 * chunk);
  std::vector<float> h(hi - lo, 1.0f);
  copy_bytes(h.data(), Device::cpu(), b.data() + lo, gpu, h.size() * sizeof(float));
  EXPECT_EQ(h.front(), 0.0f);
  EXPECT_EQ(h.back(), 0.0f);
  fill(b.data() + lo, hi - lo, 2.0f);
  copy_bytes(h.data(), Device::cpu(), b.data() + lo, gpu, h.size() * sizeof(float));
  EXPECT_EQ(h.front(), 2.0f);
  EXPECT_EQ(h.back(), 2.0f);
  copy_bytes(b.data() + n - 4, gpu, h.data(), Device::cpu(), 4 * sizeof(float));
  EXPECT_EQ(resident_bytes(b.data() + n - 4, 4 * sizeof(float)), chunk);
  zero_bytes(gpu, b.data(), sizeof(float));
  EXPECT_EQ(resident_bytes(b.data(), n * sizeof(float)), 18 * chunk);
  // Given back from the middle of a chunk: 15 whole chunks leave, the partial one is zeroed.
  zero_and_release(b.data() + lo + 1, (hi - lo - 1) * sizeof(float));
  EXPECT_EQ(resident_bytes(b.data(), n * sizeof(float)), 3 * chunk);
  copy_bytes(h.data(), Device::cpu(), b.data() + lo, gpu, 2 * sizeof(float));
  EXPECT_EQ(h[0], 2.0f);
  EXPECT_EQ(h[1], 0.0f);
  back_memory(b.data() + hi - 1, sizeof(float));
  copy_bytes(h.data(), Device::cpu(), b.data() + hi - 1, gpu, sizeof(float));
  EXPECT_EQ(h[0], 0.0f);
  synchronize();
  b = Buffer<float>();
  EXPECT_EQ(memory_stats(gpu).in_use, in_use);
  EXPECT_THROW(Buffer<float>::reserved(4).resize(5), std::logic_error);
}

TEST(ReservedMemoryOnEmulatedGpu, BacksWhereUsedAndGivesBack) {
  if (!emulated::enabled()) GTEST_SKIP() << "STRATA_EMULATED_GPU=1 not set";
  use_device(Device::cuda(0));
  check_reserved_buffer_on_current_gpu();
  use_device(Device::cpu());
}

TEST(ReservedMemoryOnGpu, BacksWhereUsedAndGivesBack) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU: " << cuda_unavailable_reason();
  use_device(Device::cuda(0));
  check_reserved_buffer_on_current_gpu();
  use_device(Device::cpu());
}

TEST(ReservedMemory, OnTheCpuPagesComeWhenWrittenAndGoWhenReleased) {
  const size_t page = backing_granularity(Device::cpu()), n = 16 * page / sizeof(float);
  Buffer<float> b = Buffer<float>::reserved(n);
  EXPECT_EQ(resident_bytes(b.data(), n * sizeof(float)), 0u);
  back_memory(b.data(), n * sizeof(float));  // nothing: the OS backs a page when first touched
  EXPECT_EQ(resident_bytes(b.data(), n * sizeof(float)), 0u);
  b[3 * page / sizeof(float)] = 1.0f;
  EXPECT_EQ(resident_bytes(b.data(), n * sizeof(float)), page);
  zero_and_release(b.data(), n * sizeof(float));
  EXPECT_EQ(resident_bytes(b.data(), n * sizeof(float)), 0u);
  EXPECT_EQ(b[3 * page / sizeof(float)], 0.0f);
}

}  // namespace
}  // namespace strata::kernels
