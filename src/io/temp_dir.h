// A directory of its own under /tmp for the duration of a scope (gnuplot's files, a
// calibration run's output), removed with everything in it when the scope ends.
#pragma once
#include <string>

namespace strata::io {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix);  // /tmp/<prefix>.XXXXXX; an Error when it cannot be made
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace strata::io
