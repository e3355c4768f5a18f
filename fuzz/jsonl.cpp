// A JSON Lines data file of arbitrary bytes (data.jsonl).
#include <cstddef>
#include <cstdint>

#include "dataset_load.h"
#include "scratch_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::load_dataset_file(strata::fuzz::scratch().write("data.jsonl", data, size));
  return 0;
}
