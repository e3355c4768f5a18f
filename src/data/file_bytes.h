// The bytes of a dataset file. Plain files are memory-mapped: the pages are the kernel's
// page cache, evictable under pressure, so a mapped file larger than RAM costs no process
// memory beyond what is being read. Gzip files (recognised by their magic bytes, whatever the
// name) are decompressed into memory; they cannot be read at random offsets.
#pragma once
#include <string>
#include <string_view>

namespace strata::data {

class FileBytes {
 public:
  explicit FileBytes(const std::string& path);  // throws strata::Error naming the path
  ~FileBytes();
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;

  // The content, without a leading UTF-8 byte-order mark (Excel writes one into CSV).
  std::string_view bytes() const { return view_; }
  bool compressed() const { return compressed_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool compressed_ = false;
  std::string inflated_;  // gzip content
  void* map_ = nullptr;   // mmap of a plain file
  size_t map_size_ = 0;
  std::string_view view_;
};

}  // namespace strata::data
