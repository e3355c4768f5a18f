// A private directory for the files a fuzz input is written to, for the parsers that take a
// path: the input goes through the same open/read/mmap code a user's file does. One per
// process (libFuzzer's -jobs/-fork children each get their own), removed at exit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace strata::fuzz {

class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  // Writes DIR/name (replacing it) and returns its path.
  std::string write(const std::string& name, const uint8_t* data, size_t size) const;
  std::string write(const std::string& name, const std::string& text) const;
  void remove(const std::string& name) const;

 private:
  std::string path_;
};

// The directory of the current process; created on first use.
const ScratchDir& scratch();

}  // namespace strata::fuzz
