// The legacy GPT-2 / RoBERTa format: vocab.json + merges.txt. The input holds both, split at
// its first NUL byte (vocab.json before, merges.txt after; no NUL: an empty merges.txt), so
// the fuzzer mutates the pair together.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "scratch_dir.h"
#include "tokenizer_exercise.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const strata::fuzz::ScratchDir& dir = strata::fuzz::scratch();
  const auto* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
  const size_t vocab_size = nul ? static_cast<size_t>(nul - data) : size;
  dir.write("vocab.json", data, vocab_size);
  dir.write("merges.txt", nul ? nul + 1 : data + size, nul ? size - vocab_size - 1 : 0);
  try {
    strata::fuzz::exercise_tokenizer(strata::tok::Tokenizer::from_dir(dir.path()));
  } catch (const strata::Error&) {
  }
  return 0;
}
