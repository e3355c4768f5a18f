// model.safetensors.index.json of arbitrary bytes, in a directory holding two real shards
// (written once at start-up) that the index may or may not name correctly.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "io/safetensors.h"
#include "scratch_dir.h"
#include "util/error.h"

namespace {

void write_shards(const strata::fuzz::ScratchDir& dir) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {7, 8};
  strata::io::write_safetensors(dir.path() + "/model-00001-of-00002.safetensors",
                                {{"embeddings.weight", strata::DType::F32, {2, 3}, a.data()},
                                 {"encoder.layer.0.bias", strata::DType::F32, {2}, b.data()}});
  strata::io::write_safetensors(dir.path() + "/model-00002-of-00002.safetensors",
                                {{"classifier.weight", strata::DType::F32, {1, 2}, b.data()}});
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  write_shards(strata::fuzz::scratch());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::scratch().write("model.safetensors.index.json", data, size);
  try {
    const strata::io::SafetensorsSet set(strata::fuzz::scratch().path());
    for (const std::string& name : set.names())
      if (set.find(name) == nullptr) __builtin_trap();  // every listed name is found
  } catch (const strata::Error&) {
  }
  return 0;
}
