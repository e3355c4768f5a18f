// A whole file mapped read-only into memory, unmapped when the object goes. The weight readers
// (safetensors, PyTorch's .bin) hand out views into it instead of copying tensors.
#pragma once
#include <cstddef>
#include <string>

namespace strata::io {

class MappedFile {
 public:
  // Errors (cannot open, not a regular file, mmap failed) name the path.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return static_cast<const std::byte*>(addr_); }
  size_t size() const { return size_; }

 private:
  void* addr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace strata::io
