// The device seam: where tensor data lives and where the ops of kernels/ops.h run. One device
// is current for the process (as torch.cuda.set_device, chosen once at start-up); every op
// runs on it and every Buffer allocates on it. The CPU implementation is synchronous and
// trivial; the CUDA one (kernels/cuda/device.cpp) keeps a compute stream, a copy stream and a
// caching allocator per process. A build without CUDA links kernels/no_cuda.cpp, which finds
// no GPU and says so.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace strata::kernels {

enum class DeviceKind { Cpu, Cuda };

struct Device {
  DeviceKind kind = DeviceKind::Cpu;
  int index = 0;  // which GPU (CUDA); 0 on the CPU

  static Device cpu() { return {}; }
  static Device cuda(int index = 0) { return {DeviceKind::Cuda, index}; }
  bool is_cuda() const { return kind == DeviceKind::Cuda; }
  bool operator==(const Device& o) const { return kind == o.kind && index == o.index; }
  std::string str() const;  // "cpu", "cuda:0"
};

// Parses "cpu", "cuda", "cuda:N" (PyTorch's spelling); false for anything else.
bool parse_device(const std::string& text, Device* out);

// ---- the current device ------------------------------------------------------------------
Device current_device();
// Makes `d` current. Refused (std::runtime_error saying what was found) when d is a GPU this
// process cannot use: a build without CUDA, no driver, or no GPU of that index.
void use_device(Device d);
// The branch every op takes; a relaxed read of one process-wide flag.
bool on_cuda();

// ---- what is there ---------------------------------------------------------------------
// GPUs this process can use (0 in a build without CUDA, without a driver or without a GPU).
int cuda_device_count();
// Why cuda_device_count() is 0, for messages: "this build has no CUDA backend", "no NVIDIA
// driver (cudaErrorInsufficientDriver)", "no CUDA-capable device". Empty when there is a GPU.
std::string cuda_unavailable_reason();

struct DeviceProperties {
  std::string name;           // "NVIDIA H100 80GB HBM3"; the CPU's model name on the CPU
  size_t total_memory = 0;    // bytes (the machine's RAM on the CPU)
  size_t free_memory = 0;     // bytes, now
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;    // SMs; cores on the CPU
  int driver_version = 0;     // CUDA's encoding, 13000 = 13.0; 0 on the CPU
  int runtime_version = 0;
};
DeviceProperties device_properties(Device d);
// One line for logs and `strata info`: "cuda:0 NVIDIA H200, 139.8 GiB (139.1 free), compute
// capability 9.0, 132 SMs, driver 13.0, runtime 13.0".
std::string describe_device(Device d);

// ---- memory on the current device -------------------------------------------------------
// Bytes aligned to at least 64 (256 on a GPU), uninitialised. On a GPU through the caching
// allocator (kernels/caching_allocator.h), so a training step that frees and allocates the
// same sizes reaches cudaMalloc only in its first step. Throws std::bad_alloc when the device
// has no room even after the cache is emptied; the message names the device and the sizes.
void* device_alloc(Device d, size_t bytes);
// `bytes` is what was asked of device_alloc for p.
void device_free(Device d, void* p, size_t bytes);

struct MemoryStats {
  size_t in_use = 0;          // bytes handed out and not yet freed
  size_t peak_in_use = 0;     // since the start or reset_peak_memory()
  size_t reserved = 0;        // in use + cached (what the device has given the process)
  uint64_t allocations = 0;   // device_alloc calls
  uint64_t system_allocations = 0;  // of which reached the system (aligned_alloc / cudaMalloc)
};
MemoryStats memory_stats(Device d);
void reset_peak_memory(Device d);
// Returns cached, unused blocks to the system (torch.cuda.empty_cache). No-op on the CPU.
void empty_cache(Device d);

// ---- memory reserved whole, backed where it is used ---------------------------------------
// For buffers that span a model of which a process uses a part (kernels/reserved_memory.h: a
// pipeline stage's window of the flat parameters and gradients, a ZeRO-2 rank's slice of the
// gradients). Address space for `bytes` on device d that reads as zero and costs no memory
// yet: on the CPU anonymous pages (the OS backs a page when first touched), on a GPU address
// space that back_memory maps chunk by chunk. Freed by free_reserved. Throws std::bad_alloc
// when there is no address space left.
void* reserve_memory(Device d, size_t bytes);
void free_reserved(Device d, void* p, size_t bytes);
// Bytes backed at a time: the page on the CPU, the chunk on a GPU (2 MiB on an H100; the
// emulated GPU's is the host's page).
size_t backing_granularity(Device d);
// Makes [p, p + bytes) memory that ops may write: on a GPU, maps every chunk of a reservation
// that the range touches and that is not backed yet (zeroed). Nothing on the CPU (a page is
// backed when first touched) or for memory that is not reserved. copy_bytes and zero_bytes do
// it for what they write; a kernel cannot, so whoever runs ops on reserved memory calls this
// first. Throws std::bad_alloc when the GPU has no memory left.
void back_memory(void* p, size_t bytes);
// Sets [p, p + bytes) to zero and gives back the memory wholly inside it: on the CPU its whole
// pages (madvise MADV_DONTNEED: a private anonymous page reads as zeros when next touched and
// costs no RAM until then), on a GPU the whole chunks of a reservation (unmapped once the device
// has finished what was queued); the partial pages or chunks at either end are only zeroed,
// since their other bytes may belong to someone else. GPU memory that is not reserved is only
// zeroed (in order with the compute stream). Safe while other threads write outside the range.
void zero_and_release(void* p, size_t bytes);
// Bytes of [p, p + bytes) backed now, counted by whole pages (the CPU: mincore) or chunks (a
// GPU's reservation); all of it for other GPU memory, which is backed from its allocation.
size_t resident_bytes(const void* p, size_t bytes);

// Page-locked host memory for copies that overlap compute (offloading); plain memory without
// CUDA. Freed by host_free_pinned.
void* host_alloc_pinned(size_t bytes);
void host_free_pinned(void* p);

// ---- copies -----------------------------------------------------------------------------
// Copies `bytes` between any two places (host memory, or memory of the current device), in
// order with the ops on the compute stream; when the destination is the host, returns after
// the data is there. A destination in reserved GPU memory is backed first.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);
// Whether p points into a GPU's memory (as opposed to the host's, pinned or not): where a
// collective must move data over NCCL or through host staging (dist/). False while the
// current device is the CPU.
bool is_device_memory(const void* p);
// Sets `bytes` bytes at p (memory of device d) to zero, in order with the compute stream
// (backing them first where they are reserved).
void zero_bytes(Device d, void* p, size_t bytes);

// ---- streams and events -----------------------------------------------------------------
// Work on one stream runs in order; the compute stream runs the ops, the copy stream moves
// offloaded tensors, and an event orders one after the other. On the CPU all of it is
// synchronous: streams are empty handles and events are already complete.
struct Stream {
  void* handle = nullptr;  // cudaStream_t on a GPU
};
Stream compute_stream();
Stream copy_stream();
// Queues the copy on `stream` and returns: the caller orders what reads or writes either side
// after it by an event (host memory must be pinned for the copy to overlap; CUDA copies
// pageable memory before returning). On the CPU and the emulated GPU, done on return.
void copy_bytes_async(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes, Stream stream);

class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(Stream s);          // marks the work queued on s so far
  void wait(Stream s) const;      // work queued on s from now on starts after the marked work
  void synchronize() const;       // the host waits for the marked work
  bool done() const;

 private:
  void* handle_ = nullptr;  // cudaEvent_t on a GPU
};

// The host waits until everything queued on the current device has finished.
void synchronize();

// How many ops of kernels/ops.h this thread has called, counted at the outermost call (an op a
// CPU kernel calls inside it is not counted): on a GPU each launches one kernel or more, so
// projections bound a small unit's GPU time by its launches (train/unit_profile.h).
uint64_t op_calls();

}  // namespace strata::kernels
