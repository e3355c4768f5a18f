// Metrics against scikit-learn 1.2 / scipy 1.10 (make_metrics_reference.py writes the fixture:
// inputs plus what sklearn and scipy return for them), plus hand-worked edge cases.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/metrics.h"
#include "util/error.h"
#include "test_paths.h"

namespace strata {
namespace {

using nlohmann::json;

const json& reference() {
  static const json j = [] {
    const std::string path = test::fixture_dir() + "/metrics/metrics_reference.json";
    std::ifstream f(path);
    EXPECT_TRUE(f.good()) << "cannot open " << path;
    return json::parse(f);
  }();
  return j;
}

// The fixture writes NaN as null. Summation order differs from numpy's pairwise sums, so
// allow a few ulps of the inputs' scale rather than bit equality.
void expect_matches(const std::map<std::string, double>& got, const json& expected) {
  EXPECT_EQ(got.size(), expected.size());
  for (const auto& [key, value] : expected.items()) {
    SCOPED_TRACE(key);
    ASSERT_TRUE(got.count(key)) << "missing key";
    if (value.is_null()) {
      EXPECT_TRUE(std::isnan(got.at(key))) << got.at(key);
    } else {
      const double want = value.get<double>();
      EXPECT_NEAR(got.at(key), want, 1e-12 * std::max(1.0, std::abs(want)));
    }
  }
}

TEST(MetricsReference, ClassificationMatchesSklearn) {
  for (const auto& c : reference()["classification"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const auto m = compute_classification(c["pred"], c["label"], c["num_labels"]);
    expect_matches(to_map(m), c["expected"]);
  }
}

TEST(MetricsReference, RegressionMatchesSklearnAndScipy) {
  for (const auto& c : reference()["regression"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    expect_matches(to_map(compute_regression(c["pred"], c["label"])), c["expected"]);
  }
}

TEST(MetricsReference, MultiLabelMatchesSklearn) {
  for (const auto& c : reference()["multilabel"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    expect_matches(to_map(compute_multilabel(c["pred"], c["label"], c["num_labels"])), c["expected"]);
  }
}

TEST(Metrics, BinaryByHand) {
  // tp = 2 (idx 0, 3), fp = 1 (idx 2), fn = 1 (idx 4), tn = 1 (idx 1).
  const auto m = compute_classification({1, 0, 1, 1, 0}, {1, 0, 0, 1, 1}, 2);
  EXPECT_DOUBLE_EQ(m.accuracy, 0.6);
  EXPECT_DOUBLE_EQ(*m.precision, 2.0 / 3);
  EXPECT_DOUBLE_EQ(*m.recall, 2.0 / 3);
  EXPECT_DOUBLE_EQ(*m.f1, 2.0 / 3);
  // Class 0: P = R = F1 = 1/2. MCC = (tp*tn - fp*fn) / sqrt(3*3*2*2) = 1/6.
  EXPECT_DOUBLE_EQ(m.f1_macro, (2.0 / 3 + 0.5) / 2);
  EXPECT_DOUBLE_EQ(m.matthews_correlation, 1.0 / 6);
  const auto keys = to_map(m);
  for (const char* k : {"accuracy", "f1", "precision", "recall", "f1_macro", "precision_macro", "recall_macro",
                        "matthews_correlation"})
    EXPECT_TRUE(keys.count(k)) << k;
}

TEST(Metrics, MulticlassHasNoBinaryKeys) {
  const auto m = compute_classification({0, 1, 2}, {0, 1, 1}, 3);
  EXPECT_FALSE(m.f1.has_value());
  EXPECT_FALSE(to_map(m).count("f1"));
  EXPECT_TRUE(to_map(m).count("f1_macro"));
}

TEST(Metrics, AllOneClass) {
  // Nothing to correlate: MCC is 0, and the never-seen positive class scores 0 (zero_division).
  const auto m = compute_classification({0, 0, 0}, {0, 0, 0}, 2);
  EXPECT_DOUBLE_EQ(m.accuracy, 1.0);
  EXPECT_DOUBLE_EQ(*m.f1, 0.0);
  EXPECT_DOUBLE_EQ(m.f1_macro, 1.0);  // class 1 occurs nowhere, so it is left out of the mean
  EXPECT_DOUBLE_EQ(m.matthews_correlation, 0.0);
}

TEST(Metrics, SpearmanAveragesTiedRanks) {
  // pred ranks: 1, 2.5, 2.5, 4; label ranks 1..4. Pearson of those = 0.948683... (= 3/sqrt(10)).
  const auto m = compute_regression({1.0, 5.0, 5.0, 9.0}, {1.0, 2.0, 3.0, 4.0});
  EXPECT_NEAR(m.spearmanr, 3.0 / std::sqrt(10.0), 1e-15);
  EXPECT_DOUBLE_EQ(m.mse, (0.0 + 9.0 + 4.0 + 25.0) / 4);
}

TEST(Metrics, ConstantOrNanRegressionGivesNan) {
  const auto constant = compute_regression({2.0, 2.0, 2.0}, {1.0, 2.0, 3.0});
  EXPECT_TRUE(std::isnan(constant.pearson));
  EXPECT_TRUE(std::isnan(constant.spearmanr));
  EXPECT_DOUBLE_EQ(constant.mse, 2.0 / 3);
  const auto one = compute_regression({1.0}, {3.0});
  EXPECT_TRUE(std::isnan(one.pearson));
  EXPECT_DOUBLE_EQ(one.mse, 4.0);
  const auto with_nan = compute_regression({1.0, NAN, 3.0}, {1.0, 2.0, 3.0});
  EXPECT_TRUE(std::isnan(with_nan.mse));
  EXPECT_TRUE(std::isnan(with_nan.pearson));
  EXPECT_TRUE(std::isnan(with_nan.spearmanr));
}

TEST(Metrics, MultiLabelByHand) {
  // Rows: exact, one false positive, one false negative. tp = 4, fp = 1, fn = 1 -> F1 = 8/10.
  const auto m = compute_multilabel({1, 0, 1, 1, 1, 0, 0, 0, 1}, {1, 0, 1, 1, 0, 0, 0, 1, 1}, 3);
  EXPECT_DOUBLE_EQ(m.accuracy, 1.0 / 3);
  EXPECT_DOUBLE_EQ(m.f1_micro, 0.8);
}

TEST(Metrics, BadInputThrows) {
  EXPECT_THROW(compute_classification({}, {}, 2), Error);
  EXPECT_THROW(compute_classification({0, 1}, {0}, 2), Error);
  EXPECT_THROW(compute_classification({0}, {-100}, 2), Error);  // caller must drop ignored labels
  EXPECT_THROW(compute_classification({2}, {0}, 2), Error);
  EXPECT_THROW(compute_classification({0}, {0}, 1), Error);
  EXPECT_THROW(compute_regression({}, {}), Error);
  EXPECT_THROW(compute_regression({1.0}, {1.0, 2.0}), Error);
  EXPECT_THROW(compute_multilabel({}, {}, 2), Error);
  EXPECT_THROW(compute_multilabel({0, 1, 1}, {0, 1, 1}, 2), Error);  // not whole rows
  EXPECT_THROW(compute_multilabel({0, 2}, {0, 1}, 2), Error);
  try {
    compute_classification({0, 1}, {1, -100}, 2);
    ADD_FAILURE() << "no strata::Error for label -100";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("-100"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace strata
