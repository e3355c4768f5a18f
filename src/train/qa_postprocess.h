// Question answering post-processing, as HF's utils_qa.postprocess_qa_predictions: start and
// end logits per feature back to answer text per example. For each example, over all its
// features: the n_best_size highest start and end logits, pairs skipped when either token is
// outside the context (or the row), end < start, or longer than max_answer_length tokens;
// score = start + end logit; the n_best_size best become the n-best list with softmax
// probabilities, text sliced from the context by the tokens' code-point offsets. With
// version_2_with_negative the null answer (score start[0] + end[0], its minimum over the
// features) joins the list, and "" is predicted when its score exceeds the best non-null
// answer's by more than null_score_diff_threshold.
//
// Scores are float sums of the float logits, as HF's numpy float32 arrays give them (the
// softmax runs in double: probabilities agree with HF's float32 ones to ~1e-7). Ties in
// the top-n selection go to the higher position (numpy's argsort, reversed); ties in the
// n-best sort keep feature, start, end order (Python's stable sort).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "data/qa_examples.h"
#include "data/qa_features.h"
#include "train/squad_metrics.h"

namespace strata {

struct QaPostprocessOptions {
  bool version_2_with_negative = false;
  size_t n_best_size = 20;
  size_t max_answer_length = 30;
  double null_score_diff_threshold = 0.0;
};

// The logits of every feature, rows of `width` floats: feature f's are
// [f * width, (f + 1) * width), rows in feature order (Batch::example_ids are feature
// indices). Positions past a feature's length hold what the model gave for its batch's padding,
// and -100 past its batch's width, as HF's nested_concat pads them: they take part in the top-n
// selection, as in HF, but are never an answer.
struct QaLogits {
  size_t width = 0;
  std::vector<float> start, end;
};

struct QaCandidate {
  std::string text;
  float start_logit = 0, end_logit = 0;
  float probability = 0;
};

struct QaPrediction {
  std::string id;
  std::string prediction_text;
  std::vector<QaCandidate> nbest;  // best first
  // version_2_with_negative: null score minus the best non-null answer's (null_odds.json).
  std::optional<float> score_diff;
};

// One prediction per example, in example order. Throws strata::Error when the logits do not
// cover every feature.
std::vector<QaPrediction> postprocess_qa_predictions(const data::QaExamples& examples, const data::QaFeatures& features,
                                                     const QaLogits& logits, const QaPostprocessOptions& opts);

// run_qa's post_processing_function: what the squad / squad_v2 metrics take (no-answer
// probability 0, as run_qa passes), and every example's gold answers.
std::vector<SquadPrediction> squad_predictions(const std::vector<QaPrediction>& preds);
std::vector<SquadReference> squad_references(const data::QaExamples& examples);

// HF's output files in `dir`: <prefix>_predictions.json ({id: text}),
// <prefix>_nbest_predictions.json ({id: [{start_logit, end_logit, text, probability}]}) and,
// when any prediction has a score_diff, <prefix>_null_odds.json; prefix "" gives
// predictions.json etc. Written atomically.
void write_qa_predictions(const std::string& dir, const std::string& prefix, const std::vector<QaPrediction>& preds);

}  // namespace strata
