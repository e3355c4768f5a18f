// Language-model pretraining data with the semantics of HF's run_mlm.py and run_clm.py: from
// options to the BatchMaker a DataLoader runs. The caller (strata train) does three things:
//
//   const PretrainingPlan plan = plan_pretraining(opts);   // checks the options
//   encoder: TokenizerEncoder(tok, plan.encoder_max_length, plan.pad_token_required)
//   DataOptions: keep_blank_lines = plan.keep_blank_lines
//   maker = make_pretraining_batches(dataset, encoder, opts);
//
// Examples are either
//  - line_by_line: each non-blank line (text) one example, encoded with truncation to
//    max_seq_length, padded per batch (run_mlm --line_by_line); or
//  - grouped (the default): every text encoded whole, concatenated in groups of 1000 texts
//    and cut into blocks of the block size, each group's remainder dropped (group_texts;
//    token_source.h). Blank lines of text files are texts here, as in HF.
// Masked LM corrupts them as mlm_masking.h says (token or whole-word masking); causal LM
// labels them with their own ids (lm_batches.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "data/batch_maker.h"
#include "data/collator.h"
#include "data/dataset.h"
#include "data/text_encoder.h"
#include "data/token_source.h"

namespace strata::data {

enum class LmObjective { Masked, Causal };

struct PretrainingOptions {
  LmObjective objective = LmObjective::Masked;
  bool line_by_line = false;
  size_t max_seq_length = 128;  // line_by_line: each line is cut to this; masked LM: default block size
  // Grouped texts: tokens per block; 0 = the default (plan_pretraining). Not with line_by_line.
  size_t block_size = 0;
  size_t tokenizer_max_length = 0;  // the tokenizer's model_max_length (tokenizer_config.json); 0 = unknown
  // The longest sequence the model takes (its usable positions: max_position_embeddings, or
  // max_position_embeddings - pad_token_id - 1 for RoBERTa); 0 = unchecked.
  size_t model_max_positions = 0;
  double mlm_probability = 0.15;
  bool whole_word_mask = false;  // masked LM only
  uint64_t seed = 42;
  bool pad_to_max_length = false;  // pad every batch to the sequence length
  size_t pad_to_multiple_of = 0;
  int num_threads = 1;  // for encoding the texts into blocks
  size_t texts_per_group = TokenBlocks::kHfTextsPerGroup;  // group_texts' group; 0 = all texts
  WarnFn warn;          // default: "warning: ..." on stderr
};

struct PretrainingPlan {
  // Tokens per example: the block size (grouped) or max_seq_length (line_by_line). The block
  // size, when block_size is 0, is max_seq_length for masked LM (run_mlm chunks into
  // max_seq_length) and, for causal LM, run_clm's default: the tokenizer's model_max_length,
  // or min(1024, model_max_positions) when that is unknown or larger than the model takes.
  // A length above tokenizer_max_length is lowered to it with a warning, as HF does; one
  // above model_max_positions is an error naming both.
  size_t sequence_length = 0;
  size_t encoder_max_length = 0;  // the encoder's truncation: 0 (none) when grouping
  bool keep_blank_lines = false;  // DataOptions::keep_blank_lines
  bool pad_token_required = true;  // false for causal LM: its padding is masked out everywhere
};

// Checks the options (throws strata::Error) and says how to set up encoder and datasets.
PretrainingPlan plan_pretraining(const PretrainingOptions& opts);

// The batches of `data`: LmBatches over EncodedTexts (line_by_line) or TokenBlocks. `encoder`
// must truncate to plan_pretraining(opts).encoder_max_length.
std::shared_ptr<const BatchMaker> make_pretraining_batches(std::shared_ptr<const TextDataset> data,
                                                           std::shared_ptr<const TextEncoder> encoder,
                                                           const PretrainingOptions& opts);

}  // namespace strata::data
