// tokenizer.json of arbitrary bytes: every component type, its fields, the vocabulary and the
// merges. A file that loads is then used (tokenizer_exercise.h).
#include <cstddef>
#include <cstdint>

#include "scratch_dir.h"
#include "tokenizer_exercise.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = strata::fuzz::scratch().write("tokenizer.json", data, size);
  try {
    strata::fuzz::exercise_tokenizer(strata::tok::Tokenizer::from_tokenizer_json(path));
  } catch (const strata::Error&) {
  }
  return 0;
}
