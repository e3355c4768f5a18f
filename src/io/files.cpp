#include "io/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "util/error.h"

namespace strata::io {

namespace {

std::string errno_text() { return std::strerror(errno); }

// After ENOSPC / EDQUOT on `path`, of which `written` bytes are on disk: "; the file needs N
// bytes, its file system has about F free without it", so the user knows how much room to
// make (the partial file is deleted next). Empty for other errors.
std::string space_hint(const std::string& path, int err, uint64_t needed, uint64_t written) {
  if (err != ENOSPC && err != EDQUOT) return "";
  std::string out = needed > 0 ? cat("; the file needs ", needed, " bytes") : std::string("; the file system is full");
  struct statvfs st {};
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (::statvfs(dir.empty() ? "." : dir.c_str(), &st) == 0)
    out += cat(", its file system has about ", static_cast<uint64_t>(st.f_bavail) * st.f_frsize + written,
               " bytes free without it");
  return out;
}

// Writes the parts in order to FD (open on `path`, which becomes `target`). A failure names
// the target, how far it got and, when the file system is full, the bytes the whole write
// needs against those free.
void write_all(int fd, std::span<const std::string_view> parts, const std::string& target, const std::string& path) {
  uint64_t total = 0, written = 0;
  for (std::string_view part : parts) total += part.size();
  for (std::string_view bytes : parts) {
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int err = errno;
        fail(target, ": write to ", path, " failed after ", written, " of ", total, " bytes: ", std::strerror(err),
             space_hint(path, err, total, written));
      }
      bytes.remove_prefix(static_cast<size_t>(n));
      written += static_cast<uint64_t>(n);
    }
  }
}

// Owns the temporary file of one atomic write: unless commit() ran, the destructor closes
// and deletes it, so a failed or interrupted write never leaves debris beside PATH.
class TempFile {
 public:
  explicit TempFile(const std::string& target) : target_(target) {
    static std::atomic<uint64_t> counter{0};
    path_ = cat(target, ".tmp.", ::getpid(), ".", counter++);
    // O_EXCL: never write through a file (or symlink) someone else put at this name.
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0) fail(target_, ": cannot create temporary file ", path_, ": ", errno_text());
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  void write(std::span<const std::string_view> parts) { write_all(fd_, parts, target_, path_); }

  // Makes the content durable before it becomes visible under the target name; otherwise a
  // crash right after the rename could leave an empty or partial file at PATH.
  void commit() {
    if (::fsync(fd_) != 0) {
      const int err = errno;  // a full disk can show only here (delayed allocation, NFS)
      fail(target_, ": fsync of ", path_, " failed: ", std::strerror(err), space_hint(path_, err, 0, 0));
    }
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail(target_, ": close of ", path_, " failed: ", errno_text());
    if (::rename(path_.c_str(), target_.c_str()) != 0)
      fail(target_, ": cannot rename ", path_, " to it: ", errno_text());
    committed_ = true;
  }

 private:
  std::string target_;
  std::string path_;
  int fd_ = -1;
  bool committed_ = false;
};

// The rename is recorded in the directory; without syncing it a crash can lose the new name.
void fsync_parent_dir(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail(path, ": cannot open directory ", dir, " to fsync it: ", errno_text());
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) fail(path, ": fsync of directory ", dir, " failed: ", std::strerror(err));
}

// Turns nlohmann's 1-based "byte of the last read character" into a line and column.
std::pair<size_t, size_t> line_and_column(std::string_view text, size_t byte) {
  const size_t pos = std::min(std::max<size_t>(byte, 1) - 1, text.size());
  const std::string_view before = text.substr(0, pos);
  const size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
  const size_t last_newline = before.rfind('\n');
  const size_t column = last_newline == std::string_view::npos ? pos + 1 : pos - last_newline;
  return {line, column};
}

// nlohmann's what() is "[json.exception.parse_error.N] parse error at ...: <reason>"; keep
// only the reason, since we report our own position.
std::string parse_error_reason(const nlohmann::json::parse_error& e) {
  const std::string_view what = e.what();
  const size_t start = what.find("parse error");
  const size_t colon = what.find(": ", start == std::string_view::npos ? 0 : start);
  return std::string(colon == std::string_view::npos ? what : what.substr(colon + 2));
}

}  // namespace

void write_file_atomic(const std::string& path, std::span<const std::string_view> parts) {
  TempFile tmp(path);
  tmp.write(parts);
  tmp.commit();
  fsync_parent_dir(path);
}

void write_file_atomic(const std::string& path, std::string_view content) {
  write_file_atomic(path, std::span<const std::string_view>(&content, 1));
}

void append_to_file(const std::string& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
  if (fd < 0) fail(path, ": cannot open to append: ", errno_text());
  try {
    write_all(fd, std::span<const std::string_view>(&text, 1), path, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) fail(path, ": close failed: ", errno_text());
}

std::string read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, ": cannot open: ", errno_text());
  std::string content;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) content.reserve(static_cast<size_t>(st.st_size));
  // Read to end of file rather than trusting st_size, which is 0 for pipes and /proc files.
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      fail(path, ": read failed: ", std::strerror(err));
    }
    if (n == 0) break;
    content.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return content;
}

bool stays_inside(const std::filesystem::path& rel) {
  return !rel.is_absolute() && std::none_of(rel.begin(), rel.end(), [](const std::filesystem::path& c) { return c == ".."; });
}

nlohmann::json read_json_file(const std::string& path) {
  const std::string text = read_file(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    const auto [line, column] = line_and_column(text, e.byte);
    fail(path, ": invalid JSON at line ", line, ", column ", column, ": ", parse_error_reason(e));
  } catch (const nlohmann::json::out_of_range& e) {  // a number past a double's range: 1e400
    fail(path, ": invalid JSON: ", e.what());
  }
}

}  // namespace strata::io
