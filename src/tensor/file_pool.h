// The host-memory tier that activation offloading moves saved tensors to on the CPU backend:
// regions of one unlinked temporary file, mapped shared. A region written here and then
// dropped (drop_resident) leaves the process's resident set: its pages live on in the kernel's
// page cache, which may write them to the file and reclaim them under memory pressure (unlike
// anonymous memory on a machine without swap). Reading a region maps its pages back.
//
// Regions are handed out in order (a bump allocator over mapped chunks of the file) and all
// freed at once by clear(); the file and its mappings are kept for reuse and grow only when a
// pass needs more than any before it. The file is reserved with posix_fallocate, so a full
// disk is an error here and never a SIGBUS in a later copy.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace strata {

class FileBackedPool {
 public:
  // Creates the file in `dir` (an existing directory) and unlinks it at once: nothing is left
  // behind, however the process ends.
  explicit FileBackedPool(const std::string& dir);
  ~FileBackedPool();
  FileBackedPool(const FileBackedPool&) = delete;
  FileBackedPool& operator=(const FileBackedPool&) = delete;

  // A page-aligned region of `bytes`, valid until clear().
  std::byte* allocate(size_t bytes);
  void clear();
  // Removes the pages of [p, p + bytes) from this process's resident set; the data stays.
  static void drop_resident(std::byte* p, size_t bytes);

  size_t file_bytes() const { return file_bytes_; }  // the pool's capacity
  const std::string& path() const { return path_; }  // where the file was created

 private:
  struct Chunk {
    std::byte* base;
    size_t bytes, used;
  };
  std::string path_;
  int fd_ = -1;
  size_t file_bytes_ = 0;
  std::vector<Chunk> chunks_;
  size_t current_ = 0;  // the chunk allocate() tries first
};

}  // namespace strata
