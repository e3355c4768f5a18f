#include "models/seq2seq_decoding.h"

#include "models/batch_checks.h"
#include "util/error.h"

namespace strata {

Batch source_batch(const ModelConfig& c, const std::vector<int32_t>& source, const char* who) {
  Batch b;
  b.B = 1;
  b.T = static_cast<int>(source.size());
  b.input_ids = source;
  b.attention_mask.assign(source.size(), 1);
  b.token_type_ids.assign(source.size(), 0);
  check_batch(c, b, cat("[", who, "] source"));
  return b;
}

}  // namespace strata
