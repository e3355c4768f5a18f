// An aligned, uninitialised, growable array: the storage of flat parameter / gradient /
// optimizer buffers and of activations. Unlike std::vector it does not zero on resize, so
// a buffer that the next kernel overwrites costs no extra pass over memory.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace strata {

template <typename T>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t n) { resize(n); }
  ~Buffer() { std::free(data_); }
  Buffer(Buffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)),
                                capacity_(std::exchange(o.capacity_, 0)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // Contents are kept only up to the old size; new elements are uninitialised.
  void resize(size_t n) {
    if (n > capacity_) {
      const size_t bytes = ((n * sizeof(T) + kAlign - 1) / kAlign) * kAlign;
      T* fresh = static_cast<T*>(std::aligned_alloc(kAlign, bytes));
      if (!fresh) throw std::bad_alloc();
      if (size_) std::memcpy(fresh, data_, size_ * sizeof(T));
      std::free(data_);
      data_ = fresh;
      capacity_ = n;
    }
    size_ = n;
  }
  void zero() {
    if (size_) std::memset(data_, 0, size_ * sizeof(T));
  }
  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  static constexpr size_t kAlign = 64;
  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace strata
