#include "tensor/resident_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/device.h"

namespace strata {

namespace {

size_t page_size() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

}  // namespace

void zero_and_release(void* p, size_t bytes) {
  if (bytes == 0) return;
  if (kernels::is_device_memory(p)) return kernels::zero_bytes(kernels::current_device(), p, bytes);
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
  if (kernels::is_device_memory(p)) return bytes;
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

namespace {
// A "Name:  1234 kB" line of /proc/self/status, in bytes; 0 if absent.
size_t status_bytes(const std::string& name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name, 0) == 0) return std::stoull(line.substr(name.size())) * 1024;
  return 0;
}
}  // namespace

size_t peak_resident_bytes() { return status_bytes("VmHWM:"); }

size_t resident_set_bytes() { return status_bytes("VmRSS:"); }

}  // namespace strata
