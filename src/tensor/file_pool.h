// The host-memory tier that activation offloading moves saved tensors to on the CPU backend
// (tensor/offload_tier.h):
// regions of one unlinked temporary file, mapped shared. A region written here and then
// dropped (drop_resident) leaves the process's resident set: its pages live on in the kernel's
// page cache, which may write them to the file and reclaim them under memory pressure (unlike
// anonymous memory on a machine without swap). Reading a region maps its pages back.
//
// The file is mapped into one reserved address range, so the pool is contiguous however often
// it grows: regions are handed out in order (a bump allocator) and all freed at once by
// clear(); the file is kept for reuse and grows only when a pass needs more than any before.
// Growth reserves disk blocks with posix_fallocate, so a full disk is an error here and never
// a SIGBUS in a later copy.
#pragma once
#include <cstddef>
#include <string>


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
  void clear() { used_ = 0; }

  // Copies between host memory and a region piece by piece, dropping each piece of the region
  // from the resident set once copied, so a copy never holds more than one piece of the pool
  // there.
  static void store(std::byte* region, const void* src, size_t bytes);
  static void load(void* dst, const std::byte* region, size_t bytes);

  size_t peak_bytes() const { return peak_; }        // the most a pass has used
  size_t file_bytes() const { return file_bytes_; }  // the file's size (>= peak_bytes)
  const std::string& path() const { return path_; }  // where the file was created (now unlinked)

 private:
  std::string path_;
  int fd_ = -1;
  std::byte* base_ = nullptr;  // the reserved address range
  size_t file_bytes_ = 0, used_ = 0, peak_ = 0;
};

}  // namespace strata
