// Evaluation metrics for evaluate / predict, defined as scikit-learn 1.2 and scipy 1.10 define
// them (what HF's `evaluate` metrics call), with sklearn's default zero_division behaviour: a
// 0/0 precision, recall or F1 is 0. Inputs are already filtered: the caller drops positions
// labelled -100 before calling. Empty or mismatched inputs throw strata::Error.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace strata {

struct ClassificationMetrics {
  double accuracy = 0;
  // Binary, positive class 1: present only when num_labels == 2.
  std::optional<double> precision, recall, f1;
  // Unweighted mean over the classes that occur in label or pred (sklearn's labels=None), so a
  // class absent from both does not pull the average down.
  double precision_macro = 0, recall_macro = 0, f1_macro = 0;
  // Multiclass MCC (Gorodkin's R_K); 0 when every label or every prediction is one class.
  double matthews_correlation = 0;
};

// pred and label: class ids in [0, num_labels), num_labels >= 2.
ClassificationMetrics compute_classification(const std::vector<int>& pred, const std::vector<int>& label,
                                             int num_labels);

struct RegressionMetrics {
  double mse = 0;
  // NaN when either side is constant (scipy returns nan and warns) or has a NaN in it.
  double pearson = 0;
  double spearmanr = 0;  // Pearson r of the ranks; ties get their average rank
};

RegressionMetrics compute_regression(const std::vector<double>& pred, const std::vector<double>& label);

struct MultiLabelMetrics {
  double accuracy = 0;  // subset accuracy: a row counts only if every label matches
  double f1_micro = 0;  // F1 over all (row, label) cells pooled
};

// pred and label: row-major [rows, num_labels] of 0/1.
MultiLabelMetrics compute_multilabel(const std::vector<int>& pred, const std::vector<int>& label, int num_labels);

// Language-model perplexity from the mean token loss, as run_mlm.py / run_clm.py report it:
// exp(eval_loss), +inf where that overflows (Python's OverflowError branch); NaN stays NaN.
// The one place masked- and causal-LM evaluation compute it.
double perplexity(double mean_loss);

// HF-style names -> values (the caller adds the "eval_" / "test_" prefix). Sorted by name, as
// Trainer.log_metrics prints them.
std::map<std::string, double> to_map(const ClassificationMetrics& m);
std::map<std::string, double> to_map(const RegressionMetrics& m);
std::map<std::string, double> to_map(const MultiLabelMetrics& m);

}  // namespace strata
