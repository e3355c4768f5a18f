// Question answering evaluation and prediction, as HF run_qa.py does them: the start and end
// logits of every feature (window) are gathered, padded with -100 to the widest batch (HF's
// nested_concat), post-processed back to answer text per example (qa_postprocess.h) and
// scored with SQuAD exact match / F1, or the SQuAD v2 metrics with version_2_with_negative.
// Predictions: <prefix>_predictions.json, <prefix>_nbest_predictions.json and, for v2,
// <prefix>_null_odds.json. There is no evaluation loss: evaluation features carry no answer
// positions, as in run_qa.
#pragma once
#include <memory>

#include "data/qa_examples.h"
#include "data/qa_features.h"
#include "train/eval_task.h"
#include "train/qa_postprocess.h"

namespace strata {

std::unique_ptr<EvalTask> qa_eval_task(std::shared_ptr<const data::QaExamples> examples,
                                       std::shared_ptr<const data::QaFeatures> features, QaPostprocessOptions opts);

}  // namespace strata
