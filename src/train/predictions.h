// Writes sequence-classification predictions: "txt" as HF's run_glue / run_classification
// write predict_results.txt (index TAB predicted label name; a list of names for multi-label;
// the value to 3 decimals for regression), or with the label and per-label probabilities as
// CSV (index, prediction, label, prob_<name>...) or JSONL.
#pragma once
#include <string>
#include <vector>

#include "models/config.h"

namespace strata {

// One sequence-classification example's outputs.
struct Prediction {
  size_t index = 0;           // the example's position in the dataset
  std::vector<float> logits;  // num_labels values
  int32_t label = -1;         // single-label target, -1 when unknown
  std::vector<double> target; // regression / multi-label targets, empty when unknown
};

void write_predictions(const std::string& path, const std::string& format, const std::vector<Prediction>& preds,
                       const std::vector<std::string>& label_names, ProblemType problem);

}  // namespace strata
