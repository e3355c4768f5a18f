// What memory a process really holds: its resident set now and at its peak. (A buffer's
// resident part, and giving a zeroed range of it back, are the device seam's:
// kernels::resident_bytes, kernels::zero_and_release.)
#pragma once
#include <cstddef>

namespace strata {

// The process's peak resident set so far (VmHWM in /proc/self/status), in bytes; 0 if the
// system does not report it.
size_t peak_resident_bytes();
// The process's resident set now (VmRSS), in bytes; 0 if the system does not report it.
size_t resident_set_bytes();

}  // namespace strata
