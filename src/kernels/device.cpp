// The device seam's front (kernels/device.h): the current device, and the CPU's side of every
// call. The GPU's side is kernels/cuda/ (or kernels/no_cuda.cpp in a build without CUDA).
#include "kernels/device.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/cuda/cuda_device.h"
#include "kernels/emulated_gpu.h"

namespace strata::kernels {

namespace {

std::atomic<bool> g_on_cuda{false};
std::atomic<int> g_cuda_index{0};

// The CPU's memory statistics: plain aligned_alloc / free (glibc's heap is the CPU's cache;
// a caching layer on top would keep pages resident that the memory plan counts as freed).
struct HostCounters {
  std::atomic<size_t> in_use{0}, peak{0};
  std::atomic<uint64_t> allocations{0};
};
HostCounters g_host;

constexpr size_t kHostAlign = 64;

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "CPU";
}

std::string gib(size_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f GiB", static_cast<double>(bytes) / (1u << 30));
  return s;
}

std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

size_t page_size() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

[[noreturn]] void out_of_memory(Device d, const char* what, size_t bytes) {
  const MemoryStats s = memory_stats(d);
  std::fprintf(stderr, "strata: out of memory on %s: %s %zu bytes, %zu in use, %zu reserved\n", d.str().c_str(), what,
               bytes, s.in_use, s.reserved);
  throw std::bad_alloc();
}

}  // namespace

// The GPU's side: the CUDA runtime's (kernels/cuda/), or the emulated GPU's
// (kernels/emulated_gpu.h: host memory the host may not touch, CPU kernels) under
// STRATA_EMULATED_GPU=1. Streams and events exist only on a real GPU.
namespace gpu {
bool emu() { return emulated::enabled(); }
int device_count() { return emu() ? 1 : cuda::device_count(); }
std::string unavailable_reason() { return emu() ? std::string() : cuda::unavailable_reason(); }
void set_device(int index) {
  if (!emu()) cuda::set_device(index);
}
DeviceProperties properties(int index) { return emu() ? emulated::properties() : cuda::properties(index); }
void* alloc(size_t bytes) { return emu() ? emulated::alloc(bytes) : cuda::alloc(bytes); }
void free(void* p) { emu() ? emulated::free(p) : cuda::free(p); }
MemoryStats memory_stats() { return emu() ? emulated::memory_stats() : cuda::memory_stats(); }
void reset_peak() { emu() ? emulated::reset_peak() : cuda::reset_peak(); }
void empty_cache() { emu() ? emulated::empty_cache() : cuda::empty_cache(); }
bool pinned() { return !emu() && cuda::device_count() > 0; }
void* compute_stream() { return emu() ? nullptr : cuda::compute_stream(); }
void* copy_stream() { return emu() ? nullptr : cuda::copy_stream(); }
void copy(void* dst, bool dst_on_gpu, const void* src, bool src_on_gpu, size_t bytes, void* stream, bool wait) {
  emu() ? emulated::copy(dst, dst_on_gpu, src, src_on_gpu, bytes)
        : cuda::copy(dst, dst_on_gpu, src, src_on_gpu, bytes, stream, wait);
}
void zero(void* p, size_t bytes) { emu() ? emulated::zero(p, bytes) : cuda::zero(p, bytes, cuda::compute_stream()); }
ReservedMemory& reserved() { return emu() ? emulated::reserved_memory() : cuda::reserved_memory(); }
bool is_device_memory(const void* p) {
  return emu() ? emulated::in_device_memory(p) : reserved().contains(p) || cuda::is_device_memory(p);
}
void* event_create() { return emu() ? nullptr : cuda::event_create(); }
void synchronize() {
  if (!emu()) cuda::synchronize();
}
}  // namespace gpu

std::string Device::str() const { return is_cuda() ? "cuda:" + std::to_string(index) : "cpu"; }

bool parse_device(const std::string& text, Device* out) {
  if (text == "cpu") {
    *out = Device::cpu();
    return true;
  }
  if (text == "cuda") {
    *out = Device::cuda(0);
    return true;
  }
  if (text.rfind("cuda:", 0) != 0 || text.size() == 5 || text.size() > 8) return false;
  int index = 0;
  for (size_t i = 5; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    index = index * 10 + (text[i] - '0');
  }
  *out = Device::cuda(index);
  return true;
}

Device current_device() { return on_cuda() ? Device::cuda(g_cuda_index.load()) : Device::cpu(); }

bool on_cuda() { return g_on_cuda.load(std::memory_order_relaxed); }

void use_device(Device d) {
  if (d.is_cuda()) {
    const int n = cuda_device_count();
    if (n == 0) throw std::runtime_error(d.str() + " asked for, but " + cuda_unavailable_reason());
    if (d.index < 0 || d.index >= n)
      throw std::runtime_error(d.str() + " asked for, but this machine has " + std::to_string(n) + " GPU" +
                               (n == 1 ? "" : "s") + " (cuda:0" + (n > 1 ? "..cuda:" + std::to_string(n - 1) : "") + ")");
    gpu::set_device(d.index);
    g_cuda_index = d.index;
  }
  g_on_cuda = d.is_cuda();
}

int cuda_device_count() { return gpu::device_count(); }

std::string cuda_unavailable_reason() { return gpu::unavailable_reason(); }

DeviceProperties device_properties(Device d) {
  if (d.is_cuda()) return gpu::properties(d.index);
  DeviceProperties p;
  p.name = cpu_model_name();
  const long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  p.total_memory = static_cast<size_t>(pages) * static_cast<size_t>(page);
  p.free_memory = static_cast<size_t>(avail) * static_cast<size_t>(page);
  p.multiprocessors = static_cast<int>(std::thread::hardware_concurrency());
  return p;
}

std::string describe_device(Device d) {
  const DeviceProperties p = device_properties(d);
  std::string s = d.str() + " " + p.name + ", " + gib(p.total_memory) + " (" + gib(p.free_memory) + " free)";
  if (!d.is_cuda()) return s + ", " + std::to_string(p.multiprocessors) + " cores";
  return s + ", compute capability " + std::to_string(p.compute_major) + "." + std::to_string(p.compute_minor) + ", " +
         std::to_string(p.multiprocessors) + " SMs, driver " + cuda_version(p.driver_version) + ", runtime " +
         cuda_version(p.runtime_version);
}

void* device_alloc(Device d, size_t bytes) {
  if (d.is_cuda()) {
    void* p = gpu::alloc(bytes);
    if (!p) out_of_memory(d, "asked for", bytes);
    return p;
  }
  const size_t rounded = std::max(kHostAlign, (bytes + kHostAlign - 1) / kHostAlign * kHostAlign);
  void* p = std::aligned_alloc(kHostAlign, rounded);
  if (!p) throw std::bad_alloc();
  ++g_host.allocations;
  const size_t now = g_host.in_use += bytes;
  size_t peak = g_host.peak.load();
  while (now > peak && !g_host.peak.compare_exchange_weak(peak, now)) {
  }
  return p;
}

void device_free(Device d, void* p, size_t bytes) {
  if (!p) return;
  if (d.is_cuda()) return gpu::free(p);
  g_host.in_use -= bytes;
  std::free(p);
}

MemoryStats memory_stats(Device d) {
  if (d.is_cuda()) return gpu::memory_stats();
  MemoryStats s;
  s.in_use = s.reserved = g_host.in_use.load();
  s.peak_in_use = g_host.peak.load();
  s.allocations = s.system_allocations = g_host.allocations.load();
  return s;
}

void reset_peak_memory(Device d) {
  if (d.is_cuda()) return gpu::reset_peak();
  g_host.peak = g_host.in_use.load();
}

void empty_cache(Device d) {
  if (d.is_cuda()) gpu::empty_cache();
}

void* reserve_memory(Device d, size_t bytes) {
  if (d.is_cuda()) {
    void* p = gpu::reserved().reserve(bytes);
    if (!p) out_of_memory(d, "no address space to reserve", bytes);
    return p;
  }
  void* p = mmap(nullptr, std::max<size_t>(bytes, 1), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

void free_reserved(Device d, void* p, size_t bytes) {
  if (!p) return;
  if (d.is_cuda()) return gpu::reserved().free(p);
  munmap(p, std::max<size_t>(bytes, 1));
}

size_t backing_granularity(Device d) { return d.is_cuda() ? gpu::reserved().granularity() : page_size(); }

namespace {
// Whether p lies in memory the current GPU reserved (kernels/reserved_memory.h).
bool in_reservation(const void* p) { return p && on_cuda() && gpu::reserved().contains(p); }
}  // namespace

void back_memory(void* p, size_t bytes) {
  if (bytes && in_reservation(p)) gpu::reserved().back(p, bytes);
}

void zero_and_release(void* p, size_t bytes) {
  if (bytes == 0) return;
  if (in_reservation(p)) return gpu::reserved().release(p, bytes);
  if (is_device_memory(p)) return zero_bytes(current_device(), p, bytes);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p), end = begin + bytes;
  const size_t page = page_size();
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (first >= last) {  // no whole page inside
    std::memset(p, 0, bytes);
    return;
  }
  std::memset(p, 0, first - begin);
  std::memset(reinterpret_cast<void*>(last), 0, end - last);
  // Should the kernel refuse (it does not for private anonymous memory), zero by hand.
  if (madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0)
    std::memset(reinterpret_cast<void*>(first), 0, last - first);
}

size_t resident_bytes(const void* p, size_t bytes) {
  if (bytes == 0) return 0;
  if (in_reservation(p)) return gpu::reserved().backed_bytes(p, bytes);
  if (is_device_memory(p)) return bytes;
  const size_t page = page_size();
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p) / page * page;
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + bytes;
  const size_t pages = (end - begin + page - 1) / page;
  std::vector<unsigned char> in_core(pages);
  if (mincore(reinterpret_cast<void*>(begin), end - begin, in_core.data()) != 0) return 0;
  size_t n = 0;
  for (unsigned char c : in_core) n += c & 1;
  return n * page;
}

void* host_alloc_pinned(size_t bytes) {
  if (gpu::pinned()) return cuda::alloc_pinned(bytes);
  void* p = std::malloc(std::max<size_t>(bytes, 1));
  if (!p) throw std::bad_alloc();
  return p;
}

void host_free_pinned(void* p) {
  if (!p) return;
  if (gpu::pinned()) return cuda::free_pinned(p);
  std::free(p);
}

Stream compute_stream() { return {on_cuda() ? gpu::compute_stream() : nullptr}; }
Stream copy_stream() { return {on_cuda() ? gpu::copy_stream() : nullptr}; }

namespace {
void copy_on(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes, Stream stream, bool wait) {
  if (bytes == 0) return;
  if (!dst_device.is_cuda() && !src_device.is_cuda()) {
    if (gpu::emu()) return emulated::copy(dst, false, src, false, bytes);  // checks both sides
    std::memcpy(dst, src, bytes);
    return;
  }
  if (dst_device.is_cuda()) back_memory(dst, bytes);
  gpu::copy(dst, dst_device.is_cuda(), src, src_device.is_cuda(), bytes, stream.handle, wait);
}
}  // namespace

void copy_bytes_async(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes, Stream stream) {
  copy_on(dst, dst_device, src, src_device, bytes, stream, false);
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  copy_on(dst, dst_device, src, src_device, bytes, compute_stream(), !dst_device.is_cuda());
}

// A process whose device is the CPU holds no GPU memory (and asks CUDA nothing).
bool is_device_memory(const void* p) { return p && on_cuda() && gpu::is_device_memory(p); }

void zero_bytes(Device d, void* p, size_t bytes) {
  if (bytes == 0) return;
  if (d.is_cuda()) {
    back_memory(p, bytes);
    return gpu::zero(p, bytes);
  }
  std::memset(p, 0, bytes);
}

Event::Event() {
  if (on_cuda()) handle_ = gpu::event_create();
}
Event::~Event() {
  if (handle_) cuda::event_destroy(handle_);
}
void Event::record(Stream s) {
  if (handle_) cuda::event_record(handle_, s.handle);
}
void Event::wait(Stream s) const {
  if (handle_) cuda::event_wait(handle_, s.handle);
}
void Event::synchronize() const {
  if (handle_) cuda::event_synchronize(handle_);
}
bool Event::done() const { return !handle_ || cuda::event_done(handle_); }

void synchronize() {
  if (on_cuda()) gpu::synchronize();
}

}  // namespace strata::kernels
