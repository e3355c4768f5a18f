#include "io/file_fingerprint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"
#include "util/rng.h"

namespace strata::io {

namespace {

constexpr uint64_t kWholeFileBytes = 1 << 20;
constexpr uint64_t kHeadBytes = 64 << 10;
constexpr uint64_t kChunkBytes = 4 << 10;
constexpr uint64_t kChunks = 16;

class ReadOnlyFile {
 public:
  explicit ReadOnlyFile(const std::string& path) : path_(path), fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) fail(path, ": cannot open: ", std::strerror(errno));
  }
  ~ReadOnlyFile() { ::close(fd_); }
  uint64_t size() const {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) fail(path_, ": cannot stat: ", std::strerror(errno));
    return static_cast<uint64_t>(st.st_size);
  }
  std::string read(uint64_t offset, uint64_t n) const {
    std::string out(n, '\0');
    for (uint64_t done = 0; done < n;) {
      const ssize_t got = ::pread(fd_, out.data() + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) fail(path_, ": cannot read ", n, " bytes at ", offset, got < 0 ? ": " : " (file shorter)",
                         got < 0 ? std::strerror(errno) : "");
      done += static_cast<uint64_t>(got);
    }
    return out;
  }

 private:
  std::string path_;
  int fd_;
};

// A .safetensors file's header: the 8-byte length and the JSON after it.
uint64_t safetensors_head(const ReadOnlyFile& f, uint64_t size) {
  if (size < 8) return size;
  const std::string len = f.read(0, 8);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(len[i])) << (8 * i);
  return n <= size - 8 ? 8 + n : size;  // a damaged length: hash what is there, loading reports it
}

}  // namespace

void Fingerprint::add(std::string_view bytes) {
  h_ = mix64(h_ ^ bytes.size());
  for (size_t i = 0; i < bytes.size(); i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, bytes.data() + i, std::min<size_t>(8, bytes.size() - i));
    h_ = mix64(h_ ^ w) + i;
  }
}

void Fingerprint::add_file(const std::string& path) {
  const ReadOnlyFile f(path);
  const uint64_t size = f.size();
  add(std::to_string(size));
  if (size <= kWholeFileBytes) {
    add(f.read(0, size));
    return;
  }
  const uint64_t head = path.ends_with(".safetensors") ? safetensors_head(f, size) : kHeadBytes;
  add(f.read(0, head));
  const uint64_t rest = size - head;
  if (rest <= kChunks * kChunkBytes) {
    add(f.read(head, rest));
    return;
  }
  for (uint64_t i = 0; i < kChunks; ++i) add(f.read(head + i * (rest - kChunkBytes) / (kChunks - 1), kChunkBytes));
}

}  // namespace strata::io
