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
constexpr size_t kReserve = size_t{1} << 38;  // 256 GiB of address space, none of it memory
constexpr size_t kGrowth = size_t{16} << 20;  // the file grows in steps of this
constexpr size_t kPiece = size_t{1} << 20;    // store / load drop the pool's pages this often

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// MADV_DONTNEED on a shared file mapping unmaps the pages; their contents stay in the page
// cache (dirty ones are written back to the file in time) and come back on the next access.
void drop_resident(const std::byte* p, size_t bytes) {
  if (::madvise(const_cast<std::byte*>(p), round_up(bytes, kPage), MADV_DONTNEED) != 0)
    fail("offload_activations: madvise on the offload pool failed: ", std::strerror(errno));
}
}  // namespace

FileBackedPool::FileBackedPool(const std::string& dir) {
  std::string templ = dir + "/strata-offload-XXXXXX";
  fd_ = ::mkstemp(templ.data());
  if (fd_ < 0)
    fail("offload_activations: cannot create the offload pool file in ", dir, ": ", std::strerror(errno),
         " (set TMPDIR to a writable directory with room for the offloaded activations)");
  path_ = templ;
  ::unlink(path_.c_str());
  void* base = ::mmap(nullptr, kReserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    ::close(fd_);
    fail("offload_activations: cannot reserve address space for the offload pool: ", std::strerror(errno));
  }
  base_ = static_cast<std::byte*>(base);
}

FileBackedPool::~FileBackedPool() {
  ::munmap(base_, kReserve);
  ::close(fd_);
}

std::byte* FileBackedPool::allocate(size_t bytes) {
  const size_t need = round_up(std::max<size_t>(bytes, 1), kPage);
  if (used_ + need > file_bytes_) {
    const size_t grown = round_up(used_ + need, kGrowth);
    if (grown > kReserve) fail("offload_activations: the offload pool would exceed ", kReserve >> 30, " GiB");
    if (const int err = ::posix_fallocate(fd_, static_cast<off_t>(file_bytes_), static_cast<off_t>(grown - file_bytes_)))
      fail("offload_activations: cannot grow the offload pool ", path_, " (deleted) from ", file_bytes_ >> 20, " to ",
           grown >> 20, " MiB: ", std::strerror(err));
    void* p = ::mmap(base_ + file_bytes_, grown - file_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd_,
                     static_cast<off_t>(file_bytes_));
    if (p == MAP_FAILED) fail("offload_activations: cannot map the offload pool ", path_, ": ", std::strerror(errno));
    file_bytes_ = grown;
  }
  std::byte* p = base_ + used_;
  used_ += need;
  peak_ = std::max(peak_, used_);
  return p;
}

void FileBackedPool::store(std::byte* region, const void* src, size_t bytes) {
  const auto* s = static_cast<const std::byte*>(src);
  for (size_t off = 0; off < bytes; off += kPiece) {
    const size_t n = std::min(kPiece, bytes - off);
    std::memcpy(region + off, s + off, n);
    drop_resident(region + off, n);
  }
}

void FileBackedPool::load(void* dst, const std::byte* region, size_t bytes) {
  auto* d = static_cast<std::byte*>(dst);
  for (size_t off = 0; off < bytes; off += kPiece) {
    const size_t n = std::min(kPiece, bytes - off);
    std::memcpy(d + off, region + off, n);
    drop_resident(region + off, n);
  }
}

}  // namespace strata
