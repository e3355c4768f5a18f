#include "jobs/checkpoint_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include "io/files.h"
#include "train/checkpoint.h"
#include "util/error.h"

namespace strata::jobs {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPartialPrefix = ".partial.";

void fsync_path(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(p.string(), ": cannot open to flush: ", std::strerror(errno));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) fail(p.string(), ": fsync failed: ", std::strerror(errno));
}

// A durable copy of a directory tree: every file flushed before the caller renames the copy.
void copy_tree(const fs::path& src, const fs::path& dst) {
  fs::create_directories(dst);
  for (const auto& e : fs::directory_iterator(src)) {
    const fs::path to = dst / e.path().filename();
    if (e.is_directory()) {
      copy_tree(e.path(), to);
    } else {
      fs::copy_file(e.path(), to, fs::copy_options::overwrite_existing);
      fsync_path(to);
    }
  }
  fsync_path(dst);
}

// Copies src to dst_dir/<name> through dst_dir/.partial.<name>.<pid>; false when src vanished
// during the copy (the trainer rotated it away), in which case nothing is left behind.
bool copy_atomically(const fs::path& src, const fs::path& dst_dir, const std::string& name) {
  const fs::path tmp = dst_dir / (kPartialPrefix + name + "." + std::to_string(::getpid()));
  fs::remove_all(tmp);
  try {
    copy_tree(src, tmp);
  } catch (const std::exception&) {
    fs::remove_all(tmp);
    if (!fs::exists(src)) return false;
    throw;
  }
  if (fs::exists(dst_dir / name)) remove_checkpoint((dst_dir / name).string());
  fs::rename(tmp, dst_dir / name);
  fsync_path(dst_dir);
  return true;
}

void remove_partials(const fs::path& dir) {
  if (!fs::exists(dir)) return;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().starts_with(kPartialPrefix)) fs::remove_all(e.path());
  remove_checkpoint_debris(dir.string());
}

std::set<std::string> names(const std::vector<std::string>& paths) {
  std::set<std::string> out;
  for (const auto& p : paths) out.insert(fs::path(p).filename().string());
  return out;
}

int64_t step_of(const std::string& name) { return std::stoll(name.substr(name.find('-') + 1)); }

}  // namespace

std::string CheckpointStore::resolve(const std::string& uri, const std::string& where) {
  if (uri.starts_with("file://")) return uri.substr(7);
  const size_t scheme = uri.find("://");
  if (scheme != std::string::npos)
    fail(where, ": checkpoint_uri '", uri, "': strata has no client for ", uri.substr(0, scheme),
         "://; use a directory every host can reach (a path or file:// URI), e.g. on a shared file system");
  return uri;
}

void CheckpointStore::check_writable(const std::string& where) const {
  // Nothing is created for good: a dry run or a job refused later leaves no directory behind.
  // The probe goes into the directory if it exists, else into its nearest existing ancestor.
  fs::path base = fs::absolute(dir_);
  while (!fs::exists(base)) base = base.parent_path();
  if (!fs::is_directory(base))
    fail(where, ": checkpoint_uri ", dir_, " is unreachable: ", base.string(), " is not a directory");
  const fs::path probe = base / (".strata-probe." + std::to_string(::getpid()));
  std::error_code ec;
  try {
    io::write_file_atomic(probe.string(), "strata checkpoint_uri probe\n");
    if (io::read_file(probe.string()) != "strata checkpoint_uri probe\n") fail("the probe file reads back different");
  } catch (const Error& e) {
    fs::remove(probe, ec);
    fail(where, ": checkpoint_uri ", dir_, " is not writable: ", e.what());
  }
  fs::remove(probe, ec);
}

std::vector<std::string> CheckpointStore::checkpoints() const { return list_checkpoints(dir_); }

std::vector<std::string> CheckpointStore::upload(const std::string& local_dir) const {
  fs::create_directories(dir_);
  remove_partials(dir_);
  const std::vector<std::string> local_paths = list_checkpoints(local_dir);  // oldest first
  const std::set<std::string> local = names(local_paths);
  const std::set<std::string> stored = names(checkpoints());
  std::vector<std::string> copied;
  for (const std::string& path : local_paths) {
    const std::string name = fs::path(path).filename().string();
    if (!stored.count(name) && copy_atomically(path, dir_, name)) copied.push_back(name);
  }
  if (local.empty()) return copied;
  int64_t newest = 0;
  for (const auto& n : local) newest = std::max(newest, step_of(n));
  for (const std::string& name : stored)
    if (!local.count(name) && step_of(name) < newest) remove_checkpoint((fs::path(dir_) / name).string());
  return copied;
}

std::string CheckpointStore::download(const std::string& local_dir) const {
  fs::create_directories(local_dir);
  remove_partials(local_dir);
  for (const std::string& old : list_checkpoints(local_dir)) remove_checkpoint(old);
  std::string newest;
  for (const std::string& src : checkpoints()) {
    const std::string name = fs::path(src).filename().string();
    copy_atomically(src, local_dir, name);
    newest = (fs::path(local_dir) / name).string();
  }
  return newest;
}

}  // namespace strata::jobs
