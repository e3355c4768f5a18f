// config.json of arbitrary bytes, read as `strata train --model DIR` reads it, then asked for
// the names and sizes the rest of strata takes from it.
#include <cstddef>
#include <cstdint>

#include "models/config.h"
#include "scratch_dir.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::scratch().write("config.json", data, size);
  try {
    const strata::ModelConfig cfg = strata::load_model_config(strata::fuzz::scratch().path());
    if (cfg.label_names().size() != static_cast<size_t>(cfg.num_labels)) __builtin_trap();
  } catch (const strata::Error&) {
  }
  return 0;
}
