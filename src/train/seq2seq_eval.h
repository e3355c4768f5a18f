// Evaluation and prediction of a sequence-to-sequence model, as HF's Seq2SeqTrainer and
// run_summarization.py / run_translation.py do them. Without predict_with_generate only the
// loss is reported (run_summarization passes no compute_metrics then). With it, every example
// is generated from its source (gen::generate over the model's seq2seq decoder), decoded
// without special tokens, and scored against its decoded labels: ROUGE-1/2/L/Lsum (x100,
// rounded to 4 places) for summarization, sacreBLEU's score for translation, and gen_len, the
// mean count of non-pad tokens in the generated sequences (the decoder start token included,
// as HF counts its output array). Predictions go to generated_predictions.txt, one per line.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "generate/generation_config.h"
#include "models/model.h"
#include "train/eval_task.h"

namespace strata {

enum class Seq2SeqMetric { Rouge, Bleu };

struct Seq2SeqEvalOptions {
  bool predict_with_generate = false;
  Seq2SeqMetric metric = Seq2SeqMetric::Rouge;
  gen::GenerationConfig generation;  // max_length counts the decoder start token, as HF's does
  int32_t decoder_start_token_id = 0, pad_token_id = 0;
  // The tokenizer's decode(ids, skip_special_tokens=true).
  std::function<std::string(const std::vector<int32_t>&)> decode;
  // The model being evaluated (the Trainer's, which exists only once the data is read).
  std::function<const Model<float>&()> model;
};

std::unique_ptr<EvalTask> seq2seq_eval_task(Seq2SeqEvalOptions o);

// run_summarization's postprocess_text for ROUGE-Lsum: the text stripped, one sentence per
// line. HF splits with nltk's punkt; strata ends a sentence at '.', '!' or '?' (closing quotes
// and brackets kept with it) followed by whitespace.
std::string sentences_per_line(const std::string& text);

}  // namespace strata
