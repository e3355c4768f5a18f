// A .safetensors file of arbitrary bytes: the length prefix, the JSON header, the offsets and
// the data section. Opening either succeeds or throws strata::Error; any other exception,
// crash or sanitizer report is a finding. What opened is read in full, so an offset the
// validation let through past the mapping shows up as a crash.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "io/safetensors.h"
#include "scratch_dir.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = strata::fuzz::scratch().write("model.safetensors", data, size);
  try {
    const strata::io::SafetensorsFile file(path);
    std::vector<double> values;
    for (const strata::io::TensorView& t : file.tensors()) {
      if (file.find(t.name) == nullptr) __builtin_trap();  // every listed tensor is found by name
      const int64_t n = t.numel();
      if (t.dtype != strata::DType::F64 && t.dtype != strata::DType::F32 && t.dtype != strata::DType::F16 &&
          t.dtype != strata::DType::BF16)
        continue;
      values.resize(static_cast<size_t>(n));
      strata::io::convert_to(t, values.data());
    }
  } catch (const strata::Error&) {
  }
  return 0;
}
