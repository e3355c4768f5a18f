#include "scratch_dir.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace strata::fuzz {

ScratchDir::ScratchDir() {
  // /dev/shm keeps millions of rewrites of the input off the disk.
  const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::getenv("TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/strata-fuzz-XXXXXX";
  if (!::mkdtemp(tmpl.data())) {
    std::perror("strata fuzz: mkdtemp");
    std::abort();
  }
  path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string ScratchDir::write(const std::string& name, const uint8_t* data, size_t size) const {
  const std::string p = path_ + "/" + name;
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out.flush()) {
    std::fprintf(stderr, "strata fuzz: cannot write %s\n", p.c_str());
    std::abort();
  }
  return p;
}

std::string ScratchDir::write(const std::string& name, const std::string& text) const {
  return write(name, reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

void ScratchDir::remove(const std::string& name) const {
  std::error_code ec;
  std::filesystem::remove(path_ + "/" + name, ec);
}

const ScratchDir& scratch() {
  static const ScratchDir dir;
  return dir;
}

}  // namespace strata::fuzz
