// How much more memory this process may take before something stops it: the tightest of its
// cgroup's memory limit and its ancestor groups' (v2 memory.max, v1 memory.limit_in_bytes, less
// what each group uses), the machine's MemAvailable, and its address-space limit (ulimit -v,
// RLIMIT_AS, less the address space it has mapped). The last counts virtual memory: mapped but
// untouched pages count against it as much as resident ones.
#pragma once
#include <cstddef>
#include <string>

namespace strata {

struct MemoryHeadroom {
  size_t bytes = 0;    // what may still be added
  std::string source;  // which limit that is, with its figures: "cgroup v1 memory.limit_in_bytes 512 MiB (...)"
};

MemoryHeadroom memory_headroom();

}  // namespace strata
