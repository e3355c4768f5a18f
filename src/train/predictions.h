// Writes predictions as HF's run_glue does (predict_results), with label names and
// probabilities: CSV (index, prediction, label, prob_<name>...) or JSONL.
#pragma once
#include <string>
#include <vector>

#include "models/config.h"
#include "train/trainer.h"

namespace strata {

void write_predictions(const std::string& path, const std::string& format, const std::vector<Prediction>& preds,
                       const std::vector<std::string>& label_names, ProblemType problem);

}  // namespace strata
