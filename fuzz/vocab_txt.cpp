// The legacy BERT format: vocab.txt of arbitrary bytes (one token per line), loaded the way
// Tokenizer::from_dir loads a directory without tokenizer.json.
#include <cstddef>
#include <cstdint>

#include "scratch_dir.h"
#include "tokenizer_exercise.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const strata::fuzz::ScratchDir& dir = strata::fuzz::scratch();
  dir.write("vocab.txt", data, size);
  try {
    strata::fuzz::exercise_tokenizer(strata::tok::Tokenizer::from_dir(dir.path()));
  } catch (const strata::Error&) {
  }
  return 0;
}
