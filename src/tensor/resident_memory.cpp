#include "tensor/resident_memory.h"

#include <fstream>
#include <string>

namespace strata {

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
