#include "util/resident_memory.h"

#include <cstdio>
#include <cstring>

namespace strata {

ResidentMemory resident_memory() {
  ResidentMemory m;
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return m;
  char line[256];
  while (std::fgets(line, sizeof line, f)) {
    unsigned long long kib = 0;
    if (std::sscanf(line, "VmRSS: %llu kB", &kib) == 1) m.now = static_cast<size_t>(kib) * 1024;
    else if (std::sscanf(line, "VmHWM: %llu kB", &kib) == 1) m.peak = static_cast<size_t>(kib) * 1024;
  }
  std::fclose(f);
  return m;
}

}  // namespace strata
