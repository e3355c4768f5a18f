// The SQuAD metrics of HF `evaluate`: "squad" (the official v1.1 script) and "squad_v2" (the
// official v2.0 script), in percent. Answers are compared after the official normalisation:
// lowercase, drop ASCII punctuation, drop the articles a / an / the, collapse whitespace, all
// with Python str semantics (data/py_text.h); F1 is over the whitespace tokens of the
// normalised strings; each question takes its best score over the gold answers.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace strata {

struct SquadPrediction {
  std::string id;
  std::string prediction_text;
  double no_answer_probability = 0;  // squad_v2 only; run_qa passes 0
};

struct SquadReference {
  std::string id;
  std::vector<std::string> answers;  // answers.text; empty = unanswerable (squad_v2)
};

std::string normalize_answer(const std::string& s);  // the official normalize_answer
double squad_exact(const std::string& prediction, const std::string& gold);  // 0 or 1
double squad_f1(const std::string& prediction, const std::string& gold);     // v1.1's f1_score

struct SquadMetrics {
  double exact_match = 0, f1 = 0;
};

// v1.1: every reference counts; one without a prediction scores 0 (the official script says
// "Unanswered question ... will receive score 0"); predictions of other ids are ignored.
// Throws strata::Error for no references, or a reference without answers (use squad_v2).
SquadMetrics compute_squad(const std::vector<SquadPrediction>& preds, const std::vector<SquadReference>& refs);

struct SquadV2Metrics {
  double exact = 0, f1 = 0;
  size_t total = 0;
  double has_ans_exact = 0, has_ans_f1 = 0;  // when has_ans_total > 0
  size_t has_ans_total = 0;
  double no_ans_exact = 0, no_ans_f1 = 0;  // when no_ans_total > 0
  size_t no_ans_total = 0;
  // The best scores over thresholds on no_answer_probability, and the thresholds.
  double best_exact = 0, best_exact_thresh = 0, best_f1 = 0, best_f1_thresh = 0;
};

// v2.0: a question is predicted unanswerable when its no_answer_probability exceeds
// no_answer_threshold (evaluate's default 1.0); an unanswerable question's only gold answer is
// "", and gold answers that normalise to "" are dropped. Every reference needs a prediction
// (the official script fails on a missing one too): else strata::Error naming the id.
SquadV2Metrics compute_squad_v2(const std::vector<SquadPrediction>& preds, const std::vector<SquadReference>& refs,
                                double no_answer_threshold = 1.0);

// HF's names: exact_match, f1; and exact, f1, total, HasAns_*, NoAns_* (when present),
// best_exact, best_exact_thresh, best_f1, best_f1_thresh.
std::map<std::string, double> to_map(const SquadMetrics& m);
std::map<std::string, double> to_map(const SquadV2Metrics& m);

}  // namespace strata
