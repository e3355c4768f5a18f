// An aligned, uninitialised, growable array on one device: the storage of flat parameter /
// gradient / optimizer buffers and of activations. Unlike std::vector it does not zero on
// resize, so a buffer that the next kernel overwrites costs no extra pass over memory. It
// lives on the device that was current when it was made (kernels/device.h) and allocates there
// through kernels::device_alloc, which on a GPU is a caching allocator: a step that resizes
// its buffers to the sizes of the step before allocates nothing. A reserved buffer
// (Buffer::reserved) spans address space of which only the parts used are backed by memory
// (kernels::reserve_memory): the flat parameters and gradients, of which a pipeline stage
// uses its window.
#pragma once
#include <cstddef>
#include <stdexcept>
#include <utility>

#include "kernels/device.h"

namespace strata {

template <typename T>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t n) { resize(n); }
  Buffer(size_t n, kernels::Device device) : device_(device) { resize(n); }
  // n values on the current device that read as zero, none of them backed by memory until
  // written (on a GPU: until kernels::back_memory, or a copy or zero() into them). It cannot
  // grow.
  static Buffer reserved(size_t n) {
    Buffer b;
    b.data_ = static_cast<T*>(kernels::reserve_memory(b.device_, n * sizeof(T)));
    b.size_ = b.capacity_ = n;
    b.reserved_ = true;
    return b;
  }
  ~Buffer() {
    if (reserved_)
      kernels::free_reserved(device_, data_, capacity_ * sizeof(T));
    else
      kernels::device_free(device_, data_, capacity_ * sizeof(T));
  }
  Buffer(Buffer&& o) noexcept
      : device_(o.device_), data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)),
        capacity_(std::exchange(o.capacity_, 0)), reserved_(std::exchange(o.reserved_, false)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    std::swap(device_, o.device_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
    std::swap(reserved_, o.reserved_);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // Contents are kept only up to the old size; new elements are uninitialised.
  void resize(size_t n) {
    if (n > capacity_) {
      if (reserved_) throw std::logic_error("a reserved Buffer cannot grow");
      T* fresh = static_cast<T*>(kernels::device_alloc(device_, n * sizeof(T)));
      if (size_) kernels::copy_bytes(fresh, device_, data_, device_, size_ * sizeof(T));
      kernels::device_free(device_, data_, capacity_ * sizeof(T));
      data_ = fresh;
      capacity_ = n;
    }
    size_ = n;
  }
  void zero() { kernels::zero_bytes(device_, data_, size_ * sizeof(T)); }
  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  kernels::Device device() const { return device_; }
  // Element access from the host: for buffers on the CPU only.
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  kernels::Device device_ = kernels::current_device();
  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  bool reserved_ = false;
};

// Sizes b to n values on the current device: a buffer made while another device was current
// (the CPU, before a run chose its GPU) starts again there, empty.
template <typename T>
void resize_on_current_device(Buffer<T>& b, size_t n) {
  if (b.device() != kernels::current_device()) b = Buffer<T>(0, kernels::current_device());
  b.resize(n);
}

}  // namespace strata
