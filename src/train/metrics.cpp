#include "train/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

#include "util/error.h"

namespace strata {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <typename A, typename B>
void check_sizes(const char* what, const std::vector<A>& pred, const std::vector<B>& label) {
  STRATA_CHECK(!pred.empty(), what, ": no examples to score (empty predictions)");
  STRATA_CHECK(pred.size() == label.size(), what, ": ", pred.size(), " predictions but ", label.size(), " labels");
}

// sklearn's _prf_divide with zero_division left at its default: 0/0 scores 0.
double ratio_or_zero(double num, double den) { return den == 0 ? 0.0 : num / den; }

// sklearn 1.2's F-beta for beta = 1: 2PR / (P + R), 0 when P + R == 0.
double f1_of(double precision, double recall) {
  const double denom = precision + recall;
  return denom == 0 ? 0.0 : 2.0 * precision * recall / denom;
}

double mean(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / v.size(); }

// scipy.stats.pearsonr's statistic: centre, scale to unit norm, dot, clip to [-1, 1].
double pearson_r(const std::vector<double>& x, const std::vector<double>& y) {
  // Undefined for a constant side; scipy warns and returns nan. (scipy raises for n < 2; one
  // point is constant, and an eval set of one should not stop training.)
  const auto constant = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [&](double e) { return e == v[0]; });
  };
  if (constant(x) || constant(y)) return kNaN;
  const double mx = mean(x), my = mean(y);
  double nx = 0, ny = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    nx += (x[i] - mx) * (x[i] - mx);
    ny += (y[i] - my) * (y[i] - my);
  }
  nx = std::sqrt(nx);
  ny = std::sqrt(ny);
  double r = 0;
  for (size_t i = 0; i < x.size(); ++i) r += ((x[i] - mx) / nx) * ((y[i] - my) / ny);
  // Rounding can push |r| a hair past 1. Comparisons keep a NaN (from NaN inputs) as NaN.
  if (r > 1.0) r = 1.0;
  if (r < -1.0) r = -1.0;
  return r;
}

// scipy.stats.rankdata(method="average"): 1-based ranks, tied values share their mean rank.
std::vector<double> average_ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double r = (static_cast<double>(i) + static_cast<double>(j)) / 2.0 + 1.0;  // mean of ranks i+1 .. j+1
    for (size_t k = i; k <= j; ++k) rank[order[k]] = r;
    i = j + 1;
  }
  return rank;
}

}  // namespace

ClassificationMetrics compute_classification(const std::vector<int>& pred, const std::vector<int>& label,
                                             int num_labels) {
  check_sizes("classification metrics", pred, label);
  STRATA_CHECK(num_labels >= 2, "classification metrics: num_labels must be >= 2, got ", num_labels);
  // Per-class counts only (no confusion matrix), so a large label space (e.g. a vocabulary)
  // costs O(num_labels) memory.
  std::vector<int64_t> tp(num_labels, 0), pred_sum(num_labels, 0), true_sum(num_labels, 0);
  int64_t correct = 0;
  for (size_t i = 0; i < pred.size(); ++i) {
    const int p = pred[i], t = label[i];
    STRATA_CHECK(t >= 0 && t < num_labels, "classification metrics: label ", t, " at index ", i,
                 " is outside [0, ", num_labels, ") (drop -100 / ignored positions before scoring)");
    STRATA_CHECK(p >= 0 && p < num_labels, "classification metrics: prediction ", p, " at index ", i,
                 " is outside [0, ", num_labels, ")");
    ++pred_sum[p];
    ++true_sum[t];
    if (p == t) {
      ++tp[t];
      ++correct;
    }
  }
  const double n = static_cast<double>(pred.size());
  ClassificationMetrics m;
  m.accuracy = static_cast<double>(correct) / n;

  int present = 0;
  for (int c = 0; c < num_labels; ++c) {
    if (pred_sum[c] == 0 && true_sum[c] == 0) continue;
    const double p = ratio_or_zero(tp[c], pred_sum[c]), r = ratio_or_zero(tp[c], true_sum[c]);
    m.precision_macro += p;
    m.recall_macro += r;
    m.f1_macro += f1_of(p, r);
    ++present;
  }
  m.precision_macro /= present;
  m.recall_macro /= present;
  m.f1_macro /= present;

  if (num_labels == 2) {
    m.precision = ratio_or_zero(tp[1], pred_sum[1]);
    m.recall = ratio_or_zero(tp[1], true_sum[1]);
    m.f1 = f1_of(*m.precision, *m.recall);
  }

  // sklearn's matthews_corrcoef, in double like sklearn (int64 products would overflow for
  // n beyond ~55k): covariances of the one-hot true / predicted class indicators.
  double dot_tp = 0, dot_pp = 0, dot_tt = 0;
  for (int c = 0; c < num_labels; ++c) {
    const double t = static_cast<double>(true_sum[c]), p = static_cast<double>(pred_sum[c]);
    dot_tp += t * p;
    dot_pp += p * p;
    dot_tt += t * t;
  }
  const double cov_ytyp = static_cast<double>(correct) * n - dot_tp;
  const double cov_ypyp = n * n - dot_pp, cov_ytyt = n * n - dot_tt;
  m.matthews_correlation = cov_ypyp * cov_ytyt == 0 ? 0.0 : cov_ytyp / std::sqrt(cov_ytyt * cov_ypyp);
  return m;
}

RegressionMetrics compute_regression(const std::vector<double>& pred, const std::vector<double>& label) {
  check_sizes("regression metrics", pred, label);
  RegressionMetrics m;
  for (size_t i = 0; i < pred.size(); ++i) m.mse += (pred[i] - label[i]) * (pred[i] - label[i]);
  m.mse /= static_cast<double>(pred.size());
  m.pearson = pearson_r(pred, label);
  // scipy's nan_policy="propagate"; checked first because NaN breaks the sort's ordering.
  const auto has_nan = [](const std::vector<double>& v) {
    return std::any_of(v.begin(), v.end(), [](double e) { return std::isnan(e); });
  };
  m.spearmanr = has_nan(pred) || has_nan(label) ? kNaN : pearson_r(average_ranks(pred), average_ranks(label));
  return m;
}

MultiLabelMetrics compute_multilabel(const std::vector<int>& pred, const std::vector<int>& label, int num_labels) {
  check_sizes("multi-label metrics", pred, label);
  STRATA_CHECK(num_labels >= 1, "multi-label metrics: num_labels must be >= 1, got ", num_labels);
  STRATA_CHECK(pred.size() % num_labels == 0, "multi-label metrics: ", pred.size(),
               " values is not a whole number of rows of ", num_labels, " labels");
  const size_t rows = pred.size() / num_labels;
  int64_t exact_rows = 0, tp = 0, pred_pos = 0, true_pos = 0;
  for (size_t r = 0; r < rows; ++r) {
    bool row_matches = true;
    for (int c = 0; c < num_labels; ++c) {
      const size_t i = r * num_labels + c;
      STRATA_CHECK((pred[i] == 0 || pred[i] == 1) && (label[i] == 0 || label[i] == 1),
                   "multi-label metrics: values must be 0 or 1; row ", r, " label ", c, " has prediction ", pred[i],
                   " and label ", label[i]);
      row_matches = row_matches && pred[i] == label[i];
      tp += pred[i] & label[i];
      pred_pos += pred[i];
      true_pos += label[i];
    }
    exact_rows += row_matches;
  }
  MultiLabelMetrics m;
  m.accuracy = static_cast<double>(exact_rows) / static_cast<double>(rows);
  m.f1_micro = f1_of(ratio_or_zero(tp, pred_pos), ratio_or_zero(tp, true_pos));
  return m;
}

std::map<std::string, double> to_map(const ClassificationMetrics& m) {
  std::map<std::string, double> out = {{"accuracy", m.accuracy},
                                       {"precision_macro", m.precision_macro},
                                       {"recall_macro", m.recall_macro},
                                       {"f1_macro", m.f1_macro},
                                       {"matthews_correlation", m.matthews_correlation}};
  if (m.f1) {
    out["precision"] = *m.precision;
    out["recall"] = *m.recall;
    out["f1"] = *m.f1;
  }
  return out;
}

std::map<std::string, double> to_map(const RegressionMetrics& m) {
  return {{"mse", m.mse}, {"pearson", m.pearson}, {"spearmanr", m.spearmanr}};
}

std::map<std::string, double> to_map(const MultiLabelMetrics& m) {
  return {{"accuracy", m.accuracy}, {"f1_micro", m.f1_micro}};
}

double perplexity(double mean_loss) {
  if (mean_loss > std::log(std::numeric_limits<double>::max())) return std::numeric_limits<double>::infinity();
  return std::exp(mean_loss);
}

}  // namespace strata
