#include "models/decoder_inputs.h"

namespace strata {

std::vector<int32_t> decoder_inputs(const ModelConfig& c, const Batch& b, int32_t decoder_start_token_id, int* Td) {
  const bool seq2seq = c.task == Task::Seq2SeqLM;
  if (seq2seq && !b.decoder_input_ids.empty()) {
    *Td = b.Td;
    return b.decoder_input_ids;
  }
  const bool from_labels = seq2seq && !b.labels.empty();
  const std::vector<int32_t>& src = from_labels ? b.labels : b.input_ids;
  *Td = from_labels ? b.Td : b.T;
  std::vector<int32_t> out(static_cast<size_t>(b.B) * *Td);
  for (int r = 0; r < b.B; ++r)
    for (int t = 0; t < *Td; ++t) {
      const size_t i = static_cast<size_t>(r) * *Td + t;
      const int32_t v = t == 0 ? decoder_start_token_id : src[i - 1];
      out[i] = v == -100 ? c.pad_token_id : v;
    }
  return out;
}

}  // namespace strata
