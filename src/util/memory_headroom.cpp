#include "util/memory_headroom.h"

#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <vector>

#include "util/error.h"

namespace strata {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::optional<size_t> read_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;
  try {
    return static_cast<size_t>(std::stoull(word));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// A "Key: N kB" line of a /proc file, in bytes.
std::optional<size_t> proc_kib(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with(key + ":")) return static_cast<size_t>(std::stoull(line.substr(key.size() + 1))) * 1024;
  return std::nullopt;
}

// This process's cgroup directory for a controller: /proc/self/cgroup names its path under
// the hierarchy's mount, but inside a container the mount often is the container's own
// group already, so the mount itself is tried after the named path.
std::vector<std::string> cgroup_dirs(const std::string& mount, const std::string& controller) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  std::vector<std::string> dirs;
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const bool match = controller.empty() ? controllers.empty() : ("," + controllers + ",").find("," + controller + ",") != std::string::npos;
    if (match) dirs.push_back(mount + line.substr(b + 1));
  }
  dirs.push_back(mount);
  return dirs;
}

struct Candidate {
  size_t bytes = std::numeric_limits<size_t>::max();
  std::string source;
  void consider(size_t b, std::string s) {
    if (b < bytes) {
      bytes = b;
      source = std::move(s);
    }
  }
};

// One group's limit, if it sets one: the limit file's value less the usage file's.
void consider_group(Candidate& best, const char* version, const std::string& dir, const char* limit_file,
                    const char* usage_file) {
  const std::optional<size_t> limit = read_number(dir + "/" + limit_file);
  const std::optional<size_t> usage = read_number(dir + "/" + usage_file);
  // v1 writes "no limit" as a page-rounded LONG_MAX; v2 writes "max" (read as none).
  if (!limit || !usage || *limit >= (size_t{1} << 62)) return;
  const size_t room = *limit > *usage ? *limit - *usage : 0;
  best.consider(room, cat("cgroup ", version, " ", dir, "/", limit_file, " ", static_cast<int64_t>(*limit / kMiB),
                          " MiB, of which the group uses ", static_cast<int64_t>(*usage / kMiB), " MiB"));
}

// This process's group and every group above it up to the hierarchy's root: a limit set only
// on an ancestor (a container's group inside a limited slice) holds as much as its own.
void consider_cgroup(Candidate& best, const char* version, const std::string& mount, const std::string& controller,
                     const char* limit_file, const char* usage_file) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(mount).lexically_normal();
  for (const std::string& dir : cgroup_dirs(mount, controller)) {
    if (!read_number(dir + "/" + usage_file)) continue;  // not this directory
    fs::path d = fs::path(dir).lexically_normal();
    if (!d.has_filename()) d = d.parent_path();  // "/sys/fs/cgroup/" names the root too
    for (;; d = d.parent_path()) {
      consider_group(best, version, d.string(), limit_file, usage_file);
      if (d == root || d == d.parent_path() || !d.string().starts_with(root.string())) break;
    }
    return;
  }
}

}  // namespace

MemoryHeadroom memory_headroom() {
  Candidate best;
  consider_cgroup(best, "v2", "/sys/fs/cgroup", "", "memory.max", "memory.current");
  consider_cgroup(best, "v1", "/sys/fs/cgroup/memory", "memory", "memory.limit_in_bytes", "memory.usage_in_bytes");
  if (const auto avail = proc_kib("/proc/meminfo", "MemAvailable"))
    best.consider(*avail, cat("MemAvailable in /proc/meminfo: ", static_cast<int64_t>(*avail / kMiB), " MiB"));
  rlimit as{};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    const size_t mapped = proc_kib("/proc/self/status", "VmSize").value_or(0);
    const size_t limit = static_cast<size_t>(as.rlim_cur);
    best.consider(limit > mapped ? limit - mapped : 0,
                  cat("the address-space limit (ulimit -v) ", static_cast<int64_t>(limit / kMiB), " MiB, of which the process maps ",
                      static_cast<int64_t>(mapped / kMiB), " MiB"));
  }
  return {best.bytes, best.source};
}

}  // namespace strata
