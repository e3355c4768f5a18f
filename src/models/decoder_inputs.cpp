#include "models/decoder_inputs.h"

namespace strata {

namespace {
bool reads_decoder_input_ids(const ModelConfig& c, const Batch& b) {
  return c.task == Task::Seq2SeqLM && !b.decoder_input_ids.empty();
}
bool reads_labels(const ModelConfig& c, const Batch& b) { return c.task == Task::Seq2SeqLM && !b.labels.empty(); }
}  // namespace

int decoder_length(const ModelConfig& c, const Batch& b) {
  return reads_decoder_input_ids(c, b) || reads_labels(c, b) ? b.Td : b.T;
}

std::vector<int32_t> decoder_inputs(const ModelConfig& c, const Batch& b, int32_t decoder_start_token_id, int* Td) {
  *Td = decoder_length(c, b);
  if (reads_decoder_input_ids(c, b)) return b.decoder_input_ids;
  const std::vector<int32_t>& src = reads_labels(c, b) ? b.labels : b.input_ids;
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
