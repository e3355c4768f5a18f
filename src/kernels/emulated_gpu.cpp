#include "kernels/emulated_gpu.h"

#include <execinfo.h>
#include <signal.h>
#include <sys/mman.h>
#include <omp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "kernels/caching_allocator.h"

namespace strata::kernels::emulated {

namespace {

constexpr size_t kAlign = 256;  // cudaMalloc's alignment

// The arena: one reservation, handed out first fit with neighbours merged on free, under a
// caching allocator as the GPU's cudaMalloc is. `top` is the end of what was ever handed out:
// only [base, top) is opened and closed, so the untouched reservation costs nothing.
struct Arena {
  char* base = nullptr;
  size_t size = 0, top = 0;
  std::map<size_t, size_t> free_ranges;  // offset -> bytes
  std::map<size_t, size_t> unbacked;     // offset -> bytes: reserved and not backed, never opened
  std::map<char*, char*> reservations;   // aligned start -> what arena_alloc returned
  std::mutex mu;                         // all of the above, opened
  int opened = 0;                        // live KernelScopes
};

Arena& arena();

void protect(char* p, size_t bytes, int prot) {
  if (bytes && mprotect(p, bytes, prot) != 0) {
    std::perror("strata: emulated GPU: mprotect");
    std::abort();
  }
}

void close_locked(Arena& a) { protect(a.base, a.top, PROT_NONE); }

// Opens what was handed out, but not the reserved chunks that are not backed.
void open_locked(Arena& a) {
  protect(a.base, a.top, PROT_READ | PROT_WRITE);
  for (const auto& [off, bytes] : a.unbacked) protect(a.base + off, bytes, PROT_NONE);
}

// Adds [off, off + bytes) to a set of runs (offset -> bytes), merged with its neighbours.
void add_run(std::map<size_t, size_t>& runs, size_t off, size_t bytes) {
  auto next = runs.lower_bound(off);
  if (next != runs.end() && off + bytes == next->first) {
    bytes += next->second;
    next = runs.erase(next);
  }
  if (next != runs.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      off = prev->first;
      bytes += prev->second;
      runs.erase(prev);
    }
  }
  runs.emplace(off, bytes);
}

// Takes [off, off + bytes), wholly inside one run, out of the unbacked runs.
void remove_unbacked_locked(Arena& a, size_t off, size_t bytes) {
  auto it = a.unbacked.upper_bound(off);
  if (it == a.unbacked.begin()) return;
  --it;
  const size_t run = it->first, run_bytes = it->second;
  if (off + bytes > run + run_bytes) return;  // not wholly inside one run: not unbacked
  a.unbacked.erase(it);
  if (off > run) a.unbacked.emplace(run, off - run);
  if (off + bytes < run + run_bytes) a.unbacked.emplace(off + bytes, run + run_bytes - off - bytes);
}

bool in_unbacked_locked(const Arena& a, const char* p) {
  const size_t off = static_cast<size_t>(p - a.base);
  auto it = a.unbacked.upper_bound(off);
  if (it == a.unbacked.begin()) return false;
  --it;
  return off < it->first + it->second;
}

void* arena_alloc(size_t bytes) {
  Arena& a = arena();
  bytes = (bytes + kAlign - 1) / kAlign * kAlign;
  std::lock_guard<std::mutex> lock(a.mu);
  for (auto it = a.free_ranges.begin(); it != a.free_ranges.end(); ++it) {
    if (it->second < bytes) continue;
    const size_t off = it->first, left = it->second - bytes;
    a.free_ranges.erase(it);
    if (left) a.free_ranges.emplace(off + bytes, left);
    if (off + bytes > a.top) {
      a.top = off + bytes;
      if (a.opened) open_locked(a);
    }
    return a.base + off;
  }
  return nullptr;
}

void arena_free(void* p, size_t bytes) {
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mu);
  add_run(a.free_ranges, static_cast<size_t>(static_cast<char*>(p) - a.base), (bytes + kAlign - 1) / kAlign * kAlign);
}

CachingAllocator& allocator() {
  static CachingAllocator* c = new CachingAllocator({arena_alloc, arena_free});
  return *c;
}

struct sigaction g_previous_segv;

// A fault inside the arena is host code touching device memory: say so, where, and stop.
void on_segv(int sig, siginfo_t* info, void* context) {
  const Arena& a = arena();
  const char* addr = static_cast<const char*>(info->si_addr);
  if (addr >= a.base && addr < a.base + a.size) {
    char line[320];
    // The books are read without their lock: the process stops here either way.
    const int n =
        in_unbacked_locked(a, addr)
            ? std::snprintf(line, sizeof line,
                            "strata: emulated GPU: reserved device memory at %p (offset %zu of the GPU's memory) "
                            "was touched where it is not backed (kernels/reserved_memory.h: back_memory before an "
                            "op writes it); a GPU would fault here. Backtrace:\n",
                            static_cast<const void*>(addr), static_cast<size_t>(addr - a.base))
            : std::snprintf(line, sizeof line,
                            "strata: emulated GPU: host code touched device memory at %p (offset %zu of the "
                            "GPU's memory) outside an op or copy of the device seam; a GPU would fault or read "
                            "garbage here. Backtrace:\n",
                            static_cast<const void*>(addr), static_cast<size_t>(addr - a.base));
    if (n > 0) (void)!write(2, line, static_cast<size_t>(n));
    void* frames[64];
    backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
    signal(SIGABRT, SIG_DFL);
    std::abort();
  }
  // Not ours: whoever handled SIGSEGV before (a sanitizer), else the default.
  if (g_previous_segv.sa_flags & SA_SIGINFO) return g_previous_segv.sa_sigaction(sig, info, context);
  if (g_previous_segv.sa_handler != SIG_DFL && g_previous_segv.sa_handler != SIG_IGN)
    return g_previous_segv.sa_handler(sig);
  signal(SIGSEGV, SIG_DFL);
}

size_t configured_bytes() {
  const char* gib = std::getenv("STRATA_EMULATED_GPU_MEMORY");
  const double g = gib && *gib ? std::atof(gib) : 8.0;
  if (!(g > 0)) {
    std::fprintf(stderr, "strata: STRATA_EMULATED_GPU_MEMORY=%s: expected a positive number of GiB\n", gib);
    std::exit(2);
  }
  return static_cast<size_t>(g * (1u << 30)) / kAlign * kAlign;
}

Arena& arena() {
  static Arena* a = [] {
    auto* r = new Arena;
    r->size = configured_bytes();
    void* p = mmap(nullptr, r->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "strata: emulated GPU: cannot reserve %zu bytes of address space: %s\n", r->size,
                   std::strerror(errno));
      std::exit(2);
    }
    r->base = static_cast<char*>(p);
    r->free_ranges.emplace(0, r->size);
    struct sigaction sa{};
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_previous_segv);
    return r;
  }();
  return *a;
}

void check_side(const void* p, bool on_gpu, const char* which) {
  if (in_device_memory(p) == on_gpu) return;
  throw std::logic_error(std::string("copy_bytes: the ") + which + " is said to be " +
                         (on_gpu ? "on cuda:0 but is host memory" : "host memory but is on cuda:0 (emulated GPU)"));
}

}  // namespace

bool enabled() {
  static const bool on = [] {
    const char* v = std::getenv("STRATA_EMULATED_GPU");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
}

bool in_device_memory(const void* p) {
  if (!enabled()) return false;
  const Arena& a = arena();
  const char* c = static_cast<const char*>(p);
  return c >= a.base && c < a.base + a.size;
}

// Scopes this thread has open: an op of this thread is running (another thread's open scope,
// a collective's copy on the reducer thread, says nothing about this one).
thread_local int t_scopes = 0;

KernelScope::KernelScope() {
  ++t_scopes;
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mu);
  if (a.opened++ == 0) open_locked(a);
}

KernelScope::~KernelScope() {
  --t_scopes;
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mu);
  if (--a.opened == 0) close_locked(a);
}

// An op's OpenMP workers run inside the scope their op's thread opened.
bool inside_op() { return t_scopes > 0 || omp_in_parallel(); }

void ArgumentCheck::refuse(int index) const {
  throw std::logic_error(std::string("kernels::") + op + ": argument " + std::to_string(index + 1) +
                         " is host memory, but the op runs on cuda:0 (emulated GPU): its data must be copied to the "
                         "device first");
}

DeviceProperties properties() {
  DeviceProperties p;
  p.name = "emulated GPU (host memory, CPU kernels; STRATA_EMULATED_GPU)";
  p.total_memory = arena().size;
  const MemoryStats s = memory_stats();
  p.free_memory = p.total_memory - s.reserved;
  p.compute_major = 9;
  p.multiprocessors = 1;
  return p;
}

void* alloc(size_t bytes) {
  void* p = allocator().allocate(bytes);
  if (p) {
    const KernelScope open;
    std::memset(p, 0xFF, bytes);  // cudaMalloc's memory holds whatever was there
  }
  return p;
}

void free(void* p) { allocator().deallocate(p); }
MemoryStats memory_stats() { return allocator().stats(); }
void reset_peak() { allocator().reset_peak(); }
void empty_cache() { allocator().empty_cache(); }

void copy(void* dst, bool dst_on_gpu, const void* src, bool src_on_gpu, size_t bytes) {
  check_side(dst, dst_on_gpu, "destination");
  check_side(src, src_on_gpu, "source");
  const KernelScope open;
  std::memmove(dst, src, bytes);
}

void zero(void* p, size_t bytes) {
  check_side(p, true, "memory to zero");
  const KernelScope open;
  std::memset(p, 0, bytes);
}

namespace {

size_t host_page() { return backing_granularity(Device::cpu()); }

// The reserve-and-map system over the arena: address space is a range of it, closed while not
// backed; backing a chunk opens it with the arena, unbacking closes it and gives its pages
// back to the host.
ReservedMemory::System arena_system() {
  ReservedMemory::System s;
  s.granularity = host_page();
  s.reserve = [](size_t bytes) -> void* {
    const size_t g = host_page();
    char* raw = static_cast<char*>(arena_alloc(bytes + g));
    if (!raw) return nullptr;
    Arena& a = arena();
    char* p = a.base + (static_cast<size_t>(raw - a.base) + g - 1) / g * g;
    std::lock_guard<std::mutex> lock(a.mu);
    a.reservations.emplace(p, raw);
    add_run(a.unbacked, static_cast<size_t>(p - a.base), bytes);
    if (a.opened) protect(p, bytes, PROT_NONE);
    return p;
  };
  s.unreserve = [](void* p, size_t bytes) {
    Arena& a = arena();
    char* raw = nullptr;
    {
      std::lock_guard<std::mutex> lock(a.mu);
      const auto it = a.reservations.find(static_cast<char*>(p));
      raw = it->second;
      a.reservations.erase(it);
      remove_unbacked_locked(a, static_cast<size_t>(static_cast<char*>(p) - a.base), bytes);
      if (a.opened) protect(static_cast<char*>(p), bytes, PROT_READ | PROT_WRITE);
    }
    arena_free(raw, bytes + host_page());
  };
  s.map = [](void* chunk) {
    Arena& a = arena();
    std::lock_guard<std::mutex> lock(a.mu);
    remove_unbacked_locked(a, static_cast<size_t>(static_cast<char*>(chunk) - a.base), host_page());
    if (a.opened) protect(static_cast<char*>(chunk), host_page(), PROT_READ | PROT_WRITE);
    return true;
  };
  s.unmap = [](void* chunk) {
    Arena& a = arena();
    std::lock_guard<std::mutex> lock(a.mu);
    add_run(a.unbacked, static_cast<size_t>(static_cast<char*>(chunk) - a.base), host_page());
    protect(static_cast<char*>(chunk), host_page(), PROT_NONE);
    madvise(chunk, host_page(), MADV_DONTNEED);
  };
  s.zero = [](void* p, size_t bytes) {
    const KernelScope open;
    std::memset(p, 0, bytes);
  };
  s.account = [](std::ptrdiff_t bytes) { allocator().note_external(bytes); };
  return s;
}

}  // namespace

ReservedMemory& reserved_memory() {
  static ReservedMemory* r = new ReservedMemory(arena_system());
  return *r;
}

}  // namespace strata::kernels::emulated
