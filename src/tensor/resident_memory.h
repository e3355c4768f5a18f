// What memory a process really holds, page by page: returning a zeroed range of a buffer to
// the operating system (ZeRO-2 keeps only its slice of the gradients), and measuring how much
// of a buffer, or of the process at its peak, is resident in RAM.
#pragma once
#include <cstddef>

namespace strata {

// Sets bytes [p, p + bytes) to zero and gives every page wholly inside the range back to the
// OS (madvise MADV_DONTNEED: a private anonymous page reads as zeros when next touched and
// costs no RAM until then). The partial pages at either end are zeroed with memset, since
// their other bytes may belong to someone else. Safe while other threads write outside
// the range. GPU memory is only zeroed (in order with the compute stream): a GPU's pages stay
// the process's until the buffer is freed.
void zero_and_release(void* p, size_t bytes);

// Bytes of [p, p + bytes) in pages resident in RAM now (mincore), counted by whole pages; all
// of it for GPU memory, which is backed in full from its allocation.
size_t resident_bytes(const void* p, size_t bytes);

// The process's peak resident set so far (VmHWM in /proc/self/status), in bytes; 0 if the
// system does not report it.
size_t peak_resident_bytes();
// The process's resident set now (VmRSS), in bytes; 0 if the system does not report it.
size_t resident_set_bytes();

}  // namespace strata
