#include "train/micro_batches.h"

#include "util/error.h"

namespace strata {

namespace {

// Rows [r0, r1) of a field holding the same number of values per row (none when empty).
template <typename V>
V rows_of(const V& v, int B, int r0, int r1, const char* field) {
  if (v.empty()) return {};
  STRATA_CHECK(B > 0 && v.size() % static_cast<size_t>(B) == 0, "split_rows: field ", field, " has ", v.size(),
               " values for ", B, " rows");
  const size_t per = v.size() / static_cast<size_t>(B);
  return V(v.begin() + static_cast<std::ptrdiff_t>(r0 * per), v.begin() + static_cast<std::ptrdiff_t>(r1 * per));
}

}  // namespace

std::vector<Batch> split_rows(const Batch& b, int parts) {
  STRATA_CHECK(parts >= 1, "split_rows: ", parts, " parts");
  if (parts == 1) return {b};
  std::vector<Batch> out(static_cast<size_t>(parts));
  for (int j = 0; j < parts; ++j) {
    const int r0 = static_cast<int>(static_cast<int64_t>(b.B) * j / parts);
    const int r1 = static_cast<int>(static_cast<int64_t>(b.B) * (j + 1) / parts);
    Batch& m = out[static_cast<size_t>(j)];
    m.B = r1 - r0;
    m.T = b.T;
    m.input_ids = rows_of(b.input_ids, b.B, r0, r1, "input_ids");
    m.attention_mask = rows_of(b.attention_mask, b.B, r0, r1, "attention_mask");
    m.token_type_ids = rows_of(b.token_type_ids, b.B, r0, r1, "token_type_ids");
    m.labels = rows_of(b.labels, b.B, r0, r1, "labels");
    m.Td = b.Td;
    m.decoder_input_ids = rows_of(b.decoder_input_ids, b.B, r0, r1, "decoder_input_ids");
    m.float_labels = rows_of(b.float_labels, b.B, r0, r1, "float_labels");
    m.start_positions = rows_of(b.start_positions, b.B, r0, r1, "start_positions");
    m.end_positions = rows_of(b.end_positions, b.B, r0, r1, "end_positions");
    m.sentence_order_label = rows_of(b.sentence_order_label, b.B, r0, r1, "sentence_order_label");
    m.word_ids = rows_of(b.word_ids, b.B, r0, r1, "word_ids");
    m.example_ids = rows_of(b.example_ids, b.B, r0, r1, "example_ids");
  }
  return out;
}

}  // namespace strata
