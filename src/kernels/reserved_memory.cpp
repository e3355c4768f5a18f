#include "kernels/reserved_memory.h"

#include <algorithm>
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace strata::kernels {

ReservedMemory::ReservedMemory(System system) : system_(std::move(system)) {
  const size_t g = system_.granularity;
  if (g == 0 || (g & (g - 1)) != 0)
    throw std::logic_error("ReservedMemory: a chunk of " + std::to_string(g) + " bytes is not a power of two");
}

ReservedMemory::~ReservedMemory() {
  while (!reservations_.empty()) free(reinterpret_cast<void*>(reservations_.begin()->first));
}

void* ReservedMemory::reserve(size_t bytes) {
  const size_t g = system_.granularity, chunks = (std::max<size_t>(bytes, 1) + g - 1) / g;
  void* p = system_.reserve(chunks * g);
  if (!p) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  reservations_.emplace(reinterpret_cast<uintptr_t>(p), Reservation{chunks * g, std::vector<bool>(chunks, false)});
  return p;
}

void ReservedMemory::free(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = find_locked(p, 0, "free");
  if (it->first != reinterpret_cast<uintptr_t>(p))
    throw std::logic_error("ReservedMemory::free: not the start of a reservation");
  std::vector<size_t> chunks;
  for (size_t c = 0; c < it->second.backed.size(); ++c)
    if (it->second.backed[c]) chunks.push_back(c);
  unmap_locked(it->first, it->second, chunks);
  system_.unreserve(p, it->second.bytes);
  reservations_.erase(it);
}

ReservedMemory::Map::const_iterator ReservedMemory::find_locked(const void* p) const {
  const auto a = reinterpret_cast<uintptr_t>(p);
  auto it = reservations_.upper_bound(a);
  if (it == reservations_.begin()) return reservations_.end();
  --it;
  return a < it->first + it->second.bytes ? it : reservations_.end();
}

ReservedMemory::Map::iterator ReservedMemory::find_locked(const void* p, size_t bytes, const char* what) {
  const auto c = find_locked(p);
  if (c == reservations_.end())
    throw std::logic_error(std::string("ReservedMemory::") + what + ": the address is in no reservation");
  if (reinterpret_cast<uintptr_t>(p) + bytes > c->first + c->second.bytes)
    throw std::logic_error(std::string("ReservedMemory::") + what + ": " + std::to_string(bytes) +
                           " bytes run past the end of their reservation");
  return reservations_.find(c->first);
}

void ReservedMemory::back(void* p, size_t bytes) {
  if (bytes == 0) return;
  const size_t g = system_.granularity;
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = find_locked(p, bytes, "back");
  Reservation& r = it->second;
  const size_t begin = reinterpret_cast<uintptr_t>(p) - it->first;
  for (size_t c = begin / g; c <= (begin + bytes - 1) / g; ++c) {
    if (r.backed[c]) continue;
    void* chunk = reinterpret_cast<void*>(it->first + c * g);
    if (!system_.map(chunk)) {
      std::fprintf(stderr, "strata: out of memory backing reserved memory: a chunk of %zu bytes, %zu backed already\n",
                   g, backed_total_);
      throw std::bad_alloc();
    }
    r.backed[c] = true;
    backed_total_ += g;
    if (system_.account) system_.account(static_cast<std::ptrdiff_t>(g));
    system_.zero(chunk, g);
  }
}

void ReservedMemory::release(void* p, size_t bytes) {
  if (bytes == 0) return;
  const size_t g = system_.granularity;
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = find_locked(p, bytes, "release");
  Reservation& r = it->second;
  const size_t begin = reinterpret_cast<uintptr_t>(p) - it->first, end = begin + bytes;
  std::vector<size_t> whole;
  for (size_t c = begin / g; c <= (end - 1) / g; ++c) {
    if (!r.backed[c]) continue;
    const size_t lo = std::max(begin, c * g), hi = std::min(end, (c + 1) * g);
    if (lo == c * g && hi == (c + 1) * g)
      whole.push_back(c);
    else
      system_.zero(reinterpret_cast<void*>(it->first + lo), hi - lo);
  }
  unmap_locked(it->first, r, whole);
}

void ReservedMemory::unmap_locked(uintptr_t base, Reservation& r, const std::vector<size_t>& chunks) {
  if (chunks.empty()) return;
  if (system_.wait_idle) system_.wait_idle();
  const size_t g = system_.granularity;
  for (size_t c : chunks) {
    system_.unmap(reinterpret_cast<void*>(base + c * g));
    r.backed[c] = false;
    backed_total_ -= g;
    if (system_.account) system_.account(-static_cast<std::ptrdiff_t>(g));
  }
}

size_t ReservedMemory::backed_bytes(const void* p, size_t bytes) const {
  if (bytes == 0) return 0;
  const size_t g = system_.granularity;
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = find_locked(p);
  if (it == reservations_.end()) return 0;
  const size_t begin = reinterpret_cast<uintptr_t>(p) - it->first;
  const size_t last = std::min(begin + bytes, it->second.bytes) - 1;
  size_t n = 0;
  for (size_t c = begin / g; c <= last / g; ++c) n += it->second.backed[c] ? g : 0;
  return n;
}

bool ReservedMemory::contains(const void* p) const {
  std::lock_guard<std::mutex> lock(mu_);
  return find_locked(p) != reservations_.end();
}

size_t ReservedMemory::backed_total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return backed_total_;
}

}  // namespace strata::kernels
