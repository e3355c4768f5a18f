#include "tensor/file_pool.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace strata {

namespace {
constexpr size_t kPage = 4096;
// New chunks are at least this large, so a pass of many small regions maps few chunks.
constexpr size_t kMinChunk = size_t{64} << 20;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }
}  // namespace

FileBackedPool::FileBackedPool(const std::string& dir) {
  std::string templ = dir + "/strata-offload-XXXXXX";
  fd_ = ::mkstemp(templ.data());
  if (fd_ < 0)
    fail("offload_activations: cannot create the offload pool file in ", dir, ": ", std::strerror(errno),
         " (set TMPDIR to a writable directory with room for the offloaded activations)");
  path_ = templ;
  ::unlink(path_.c_str());
}

FileBackedPool::~FileBackedPool() {
  for (const Chunk& c : chunks_) ::munmap(c.base, c.bytes);
  if (fd_ >= 0) ::close(fd_);
}

std::byte* FileBackedPool::allocate(size_t bytes) {
  const size_t need = round_up(std::max<size_t>(bytes, 1), kPage);
  for (; current_ < chunks_.size(); ++current_) {
    Chunk& c = chunks_[current_];
    if (c.bytes - c.used >= need) {
      std::byte* p = c.base + c.used;
      c.used += need;
      return p;
    }
  }
  const size_t chunk = std::max(need, kMinChunk);
  if (const int err = ::posix_fallocate(fd_, static_cast<off_t>(file_bytes_), static_cast<off_t>(chunk)))
    fail("offload_activations: cannot grow the offload pool ", path_, " (deleted) from ", file_bytes_ >> 20, " to ",
         (file_bytes_ + chunk) >> 20, " MiB: ", std::strerror(err));
  void* base = ::mmap(nullptr, chunk, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, static_cast<off_t>(file_bytes_));
  if (base == MAP_FAILED) fail("offload_activations: cannot map the offload pool ", path_, ": ", std::strerror(errno));
  file_bytes_ += chunk;
  chunks_.push_back({static_cast<std::byte*>(base), chunk, need});
  current_ = chunks_.size() - 1;
  return chunks_.back().base;
}

void FileBackedPool::clear() {
  for (Chunk& c : chunks_) c.used = 0;
  current_ = 0;
}

void FileBackedPool::drop_resident(std::byte* p, size_t bytes) {
  // MADV_DONTNEED on a shared file mapping unmaps the pages; their (dirty) contents stay in the
  // page cache and come back on the next access.
  if (::madvise(p, round_up(bytes, kPage), MADV_DONTNEED) != 0)
    fail("offload_activations: madvise on the offload pool failed: ", std::strerror(errno));
}

}  // namespace strata
