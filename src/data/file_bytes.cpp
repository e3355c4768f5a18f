#include "data/file_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "util/error.h"

namespace strata::data {

namespace {

// Inflates every gzip member (concatenated .gz files are one stream to gunzip as well).
std::string gunzip(const std::string& path, std::string_view in) {
  std::string out;
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) fail(path, ": cannot initialise zlib");
  size_t fed = 0;  // bytes of `in` handed to zlib so far; avail_in is 32-bit, so in pieces
  char buf[1 << 16];
  for (;;) {
    if (z.avail_in == 0 && fed < in.size()) {
      const size_t n = std::min<size_t>(in.size() - fed, UINT32_MAX);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + fed));
      z.avail_in = static_cast<uInt>(n);
      fed += n;
    }
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    const int rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0 && fed == in.size()) break;
      if (inflateReset(&z) == Z_OK) continue;  // another gzip member follows
    }
    if (rc == Z_OK || (rc == Z_BUF_ERROR && z.avail_in == 0 && fed < in.size())) continue;
    const std::string msg = rc == Z_BUF_ERROR ? "the file ends inside the compressed stream (truncated?)"
                            : z.msg           ? z.msg
                                              : "zlib error " + std::to_string(rc);
    inflateEnd(&z);
    fail(path, ": corrupt gzip data after ", out.size(), " decompressed bytes: ", msg);
  }
  inflateEnd(&z);
  return out;
}

}  // namespace

FileBytes::FileBytes(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, ": not a regular file");
  }
  map_size_ = static_cast<size_t>(st.st_size);
  if (map_size_ > 0) {
    map_ = ::mmap(nullptr, map_size_, PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);
    if (map_ == MAP_FAILED) {
      map_ = nullptr;
      fail(path, ": cannot map: ", std::strerror(err));
    }
  } else {
    ::close(fd);
  }
  std::string_view raw(static_cast<const char*>(map_), map_ ? map_size_ : 0);
  if (raw.size() >= 2 && static_cast<uint8_t>(raw[0]) == 0x1f && static_cast<uint8_t>(raw[1]) == 0x8b) {
    compressed_ = true;
    inflated_ = gunzip(path, raw);
    ::munmap(map_, map_size_);
    map_ = nullptr;
    raw = inflated_;
  }
  if (raw.starts_with("\xEF\xBB\xBF")) raw.remove_prefix(3);
  view_ = raw;
}

FileBytes::~FileBytes() {
  if (map_) ::munmap(map_, map_size_);
}

}  // namespace strata::data
