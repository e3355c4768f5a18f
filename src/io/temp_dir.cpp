#include "io/temp_dir.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "util/error.h"

namespace strata::io {

TempDir::TempDir(const std::string& prefix) {
  std::string tmpl = "/tmp/" + prefix + ".XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) fail("cannot create a temporary directory ", tmpl);
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;  // best effort: a destructor must not throw
  std::filesystem::remove_all(path_, ec);
}

}  // namespace strata::io
