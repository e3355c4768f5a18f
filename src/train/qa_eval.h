// Question answering evaluation and prediction, as HF run_qa.py does them: the start and end
// logits of every feature (window) are gathered, post-processed back to answer text per
// example (qa_postprocess.h) and scored with SQuAD exact match / F1, or the SQuAD v2 metrics
// with version_2_with_negative.
//
// One departure from HF: a feature's logits past its own tokens are -100, not what the model
// gave on its batch's padding. In HF those padding positions take part in the n-best
// selection and can crowd out real candidates, so answers depend on how features were
// batched (and on the number of ranks); here they cannot.
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
