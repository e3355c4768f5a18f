#include "data/pretraining.h"

#include <algorithm>
#include <cstdio>

#include "data/lm_batches.h"
#include "data/token_source.h"
#include "util/console.h"
#include "util/error.h"

namespace strata::data {

namespace {
constexpr size_t kHfDefaultBlock = 1024;  // run_clm's cap when model_max_length is unusable
}

PretrainingPlan plan_pretraining(const PretrainingOptions& o) {
  const bool masked = o.objective == LmObjective::Masked;
  if (masked && !(o.mlm_probability > 0 && o.mlm_probability < 1))
    fail("mlm_probability: expected a value in (0, 1), got ", o.mlm_probability);
  if (!masked && o.whole_word_mask)
    fail("whole_word_mask applies to masked-LM pretraining; this model is a causal LM");
  if (o.line_by_line && o.block_size > 0)
    fail("block_size (", o.block_size, ") sets the length of grouped texts; with line_by_line each line is cut at "
         "max_seq_length instead: set one of them");
  if (o.max_seq_length == 0) fail("max_seq_length must be > 0");
  PretrainingPlan p;
  const char* name = "max_seq_length";
  if (o.line_by_line) {
    p.sequence_length = o.max_seq_length;
  } else if (o.block_size > 0) {
    p.sequence_length = o.block_size;
    name = "block_size";
  } else if (masked) {
    p.sequence_length = o.max_seq_length;
  } else {
    name = "block_size";
    const size_t tok = o.tokenizer_max_length, model = o.model_max_positions;
    p.sequence_length = tok > 0 && (model == 0 || tok <= model) ? tok
                        : model > 0                              ? std::min(kHfDefaultBlock, model)
                                                                 : kHfDefaultBlock;
  }
  if (o.tokenizer_max_length > 0 && p.sequence_length > o.tokenizer_max_length) {
    const std::string msg = cat(name, " ", p.sequence_length, " is larger than the tokenizer's model_max_length (",
                                o.tokenizer_max_length, "); using ", o.tokenizer_max_length);
    if (o.warn)
      o.warn(msg);
    else
      console_warning(msg);
    p.sequence_length = o.tokenizer_max_length;
  }
  if (o.model_max_positions > 0 && p.sequence_length > o.model_max_positions)
    fail(name, " ", p.sequence_length, " is larger than the model's maximum sequence length ", o.model_max_positions,
         " (max_position_embeddings); set ", name, " to at most ", o.model_max_positions);
  p.encoder_max_length = o.line_by_line ? o.max_seq_length : 0;
  p.keep_blank_lines = !o.line_by_line;
  p.pad_token_required = masked;
  return p;
}

std::shared_ptr<const BatchMaker> make_pretraining_batches(std::shared_ptr<const TextDataset> data,
                                                           std::shared_ptr<const TextEncoder> encoder,
                                                           const PretrainingOptions& o) {
  const PretrainingPlan plan = plan_pretraining(o);
  if (encoder->max_length() != plan.encoder_max_length)
    fail("pretraining data: the encoder truncates to ", encoder->max_length(), " tokens (0 = none) but ",
         o.line_by_line ? "line_by_line needs max_seq_length" : "grouping texts needs no truncation", " (",
         plan.encoder_max_length, ")");
  CollatorOptions col;
  col.max_seq_length = plan.sequence_length;
  col.pad_to_max_length = o.pad_to_max_length;
  col.pad_to_multiple_of = o.pad_to_multiple_of;
  std::shared_ptr<const TokenSource> source;
  if (o.line_by_line)
    source = std::make_shared<EncodedTexts>(data, encoder);
  else
    source = std::make_shared<TokenBlocks>(*data, *encoder, plan.sequence_length, o.num_threads, o.texts_per_group);
  std::optional<MaskedLm> mlm;
  if (o.objective == LmObjective::Masked) mlm = MaskedLm{o.mlm_probability, o.seed, o.whole_word_mask};
  return std::make_shared<LmBatches>(source, *encoder, col, mlm);
}

}  // namespace strata::data
