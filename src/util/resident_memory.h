// This process's resident memory as the kernel counts it (/proc/self/status): VmRSS now and
// VmHWM, its peak so far. What the memory plan (models/memory_estimate.h) is checked against.
#pragma once
#include <cstddef>

namespace strata {

struct ResidentMemory {
  size_t now = 0, peak = 0;  // bytes; 0 where /proc is unavailable
};

ResidentMemory resident_memory();

}  // namespace strata
