// A pytorch_model.bin of arbitrary bytes: the zip directory, its local headers, the pickle and
// the storages. Opening either succeeds or throws strata::Error (a refused callable included);
// any other exception, crash or sanitizer report is a finding. Every tensor that opened is
// read in full, so a view the checks let past its storage shows up as a crash.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "io/torch_bin.h"
#include "scratch_dir.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = strata::fuzz::scratch().write("pytorch_model.bin", data, size);
  try {
    const strata::io::TorchBinFile file(path);
    std::vector<double> values;
    for (const strata::io::TensorView& t : file.tensors()) {
      if (file.find(t.name) == nullptr) __builtin_trap();
      if (t.dtype != strata::DType::F64 && t.dtype != strata::DType::F32 && t.dtype != strata::DType::F16 &&
          t.dtype != strata::DType::BF16)
        continue;
      values.resize(static_cast<size_t>(t.numel()));
      strata::io::convert_to(t, values.data());
    }
  } catch (const strata::Error&) {
  }
  return 0;
}
