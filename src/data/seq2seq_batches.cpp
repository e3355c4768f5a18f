#include "data/seq2seq_batches.h"

#include <cstdio>

#include "util/error.h"

namespace strata::data {

Seq2SeqBatches::Seq2SeqBatches(std::shared_ptr<const Seq2SeqExamples> examples, const TextEncoder& encoder,
                               Seq2SeqBatchOptions o, const WarnFn& warn)
    : examples_(std::move(examples)), pad_id_(encoder.pad_id()), o_(std::move(o)) {
  STRATA_CHECK(encoder.max_length() == 0, "Seq2SeqBatches: the encoder must not truncate (it cuts each side itself)");
  size_t truncated = 0, first_line = 0;
  for (const Seq2SeqExample& e : examples_->examples) {
    Encoded source = encoder.encode(o_.source_prefix + e.source);
    truncate(source, o_.max_source_length);
    sources_.push_back(std::move(source));
    if (!examples_->has_targets) continue;
    Encoded target = encoder.encode(e.target);
    if (target.ids.size() > o_.max_target_length && truncated++ == 0) first_line = e.line;
    truncate(target, o_.max_target_length);
    targets_.push_back(std::move(target.ids));
  }
  if (truncated > 0) {
    const std::string msg = cat(examples_->path, ": ", truncated, " of ", examples_->examples.size(),
                                " targets are longer than max_target_length (", o_.max_target_length,
                                " tokens) and were truncated (first at line ", first_line, ")");
    if (warn) warn(msg);
    else std::fprintf(stderr, "warning: %s\n", msg.c_str());
  }
}

Batch Seq2SeqBatches::make(std::span<const size_t> examples, uint64_t) const {
  std::vector<Encoded> rows;
  rows.reserve(examples.size());
  for (size_t i : examples) rows.push_back(sources_[i]);
  CollatorOptions c;
  c.max_seq_length = o_.max_source_length;
  c.pad_to_max_length = o_.pad_to_max_length;
  c.pad_to_multiple_of = o_.pad_to_multiple_of;
  Batch b = collate(std::move(rows), c, pad_id_);
  if (targets_.empty() || examples.empty()) return b;
  size_t Td = o_.pad_to_max_length ? o_.max_target_length : 0;
  for (size_t i : examples) Td = std::max(Td, targets_[i].size());
  if (o_.pad_to_multiple_of > 0) Td = (Td + o_.pad_to_multiple_of - 1) / o_.pad_to_multiple_of * o_.pad_to_multiple_of;
  // run_summarization pads to max_length with the pad id, then swaps it for -100 when
  // ignore_pad_token_for_loss; the collator's own padding is always -100.
  const int32_t fill = o_.pad_to_max_length && !o_.ignore_pad_token_for_loss ? pad_id_ : -100;
  b.Td = static_cast<int>(Td);
  b.labels.assign(examples.size() * Td, fill);
  for (size_t r = 0; r < examples.size(); ++r) {
    const std::vector<int32_t>& t = targets_[examples[r]];
    std::copy(t.begin(), t.end(), b.labels.begin() + static_cast<std::ptrdiff_t>(r * Td));
  }
  return b;
}

}  // namespace strata::data
