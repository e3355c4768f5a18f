// Moving values between the host and the device the ops run on (kernels/device.h), for the
// places where the host must compute or read them: index arrays the host derives from a batch
// (position ids, pooled rows, shifted labels), weights read from or written to files, outputs
// that metrics and files read. On the CPU none of these copies anything: the host's memory is
// the device's.
#pragma once
#include <cstddef>
#include <vector>

#include "kernels/device.h"
#include "tensor/buffer.h"

namespace strata {

// A host array and its copy on the current device.
template <typename E>
class DeviceArray {
 public:
  std::vector<E>& host() { return host_; }
  const std::vector<E>& host() const { return host_; }
  // Copies host() to the device and returns where the ops read it (on the CPU, host() itself).
  const E* upload() { return upload(host_); }
  // The same for a vector kept elsewhere (a batch's column), which must outlive the upload on
  // the CPU, where nothing is copied.
  const E* upload(const std::vector<E>& v) {
    if (!kernels::on_cuda()) return data_ = v.data();
    resize_on_current_device(device_, v.size());
    kernels::copy_bytes(device_.data(), device_.device(), v.data(), kernels::Device::cpu(), v.size() * sizeof(E));
    return data_ = v.empty() ? nullptr : device_.data();
  }
  // What the last upload returned.
  const E* data() const { return data_; }

 private:
  std::vector<E> host_;
  Buffer<E> device_{0, kernels::Device::cpu()};
  const E* data_ = nullptr;
};

// Values an op writes on the current device and the host then reads (argmax ids of logits
// that stay on the device): on the CPU the op writes the host array itself.
template <typename E>
class DeviceResult {
 public:
  // Where the op writes n values.
  E* on_device(size_t n) {
    host_.resize(n);
    if (!kernels::on_cuda()) return host_.data();
    resize_on_current_device(device_, n);
    return device_.data();
  }
  // The values, after the op (one copy on a GPU).
  const E* on_host() {
    if (device_.device().is_cuda())
      kernels::copy_bytes(host_.data(), kernels::Device::cpu(), device_.data(), device_.device(), host_.size() * sizeof(E));
    return host_.data();
  }

 private:
  std::vector<E> host_;
  Buffer<E> device_{0, kernels::Device::cpu()};
};

// n values at `offset` of a buffer, written by the host: its own memory on the CPU, a host
// copy on a GPU that upload() sends.
template <typename E>
class StagedWrite {
 public:
  StagedWrite(Buffer<E>& dst, size_t offset, size_t n) : dst_(dst), offset_(offset), n_(n) {
    if (dst.device().is_cuda()) staging_.resize(n);
  }
  E* data() { return staging_.empty() ? dst_.data() + offset_ : staging_.data(); }
  void upload() {
    if (!staging_.empty())
      kernels::copy_bytes(dst_.data() + offset_, dst_.device(), staging_.data(), kernels::Device::cpu(), n_ * sizeof(E));
  }

 private:
  Buffer<E>& dst_;
  size_t offset_, n_;
  std::vector<E> staging_;
};

// n values of `device`'s memory where the host reads them: the memory itself on the CPU, a copy
// in `storage` (reused from call to call) on a GPU.
template <typename E>
const E* host_view(const E* src, size_t n, std::vector<E>& storage,
                   kernels::Device device = kernels::current_device()) {
  if (!device.is_cuda()) return src;
  storage.resize(n);
  kernels::copy_bytes(storage.data(), kernels::Device::cpu(), src, device, n * sizeof(E));
  return storage.data();
}

// host_view with storage of its own: n values of device memory read by the host, copied at
// construction on a GPU. `src` is memory of `device` (by default the current one).
template <typename E>
class StagedRead {
 public:
  StagedRead(const E* src, size_t n, kernels::Device device = kernels::current_device())
      : data_(host_view(src, n, staging_, device)) {}
  StagedRead(const Buffer<E>& src, size_t offset, size_t n) : StagedRead(src.data() + offset, n, src.device()) {}
  const E* data() const { return data_; }

 private:
  std::vector<E> staging_;  // first: data_ may point into it
  const E* data_;
};

}  // namespace strata
