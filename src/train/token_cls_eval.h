// Token classification evaluation and prediction, as HF run_ner.py does them. Metrics: the
// argmax tag against the gold tag at every position whose label is not -100 (every
// sub-token with label_all_tokens, else each word's first), as seqeval entity precision /
// recall / F1 and token accuracy (seqeval.h). Predictions: each word's tag, taken at its
// first token (from the batch's word_ids, so unlabelled files predict too), one example per
// line, tags separated by spaces: HF's predictions.txt. Words cut off by max_seq_length get
// no tag.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "train/eval_task.h"

namespace strata {

// tag_names: id -> tag (the model's id2label). entity_level: also per-type metrics (run_ner's
// return_entity_level_metrics).
std::unique_ptr<EvalTask> token_cls_eval_task(std::vector<std::string> tag_names, bool entity_level);

}  // namespace strata
