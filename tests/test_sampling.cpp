// generate/sampling: greedy argmax, HF's warpers (temperature, top-k, top-p) on hand-worked
// values, their order, and draws from the warped distribution.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "generate/sampling.h"
#include "util/rng.h"

namespace strata::gen {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> log_probs(const std::vector<double>& p) {
  std::vector<double> s;
  for (double x : p) s.push_back(std::log(x));
  return s;
}

std::vector<bool> kept(const std::vector<double>& s) {
  std::vector<bool> k;
  for (double x : s) k.push_back(x != -kInf);
  return k;
}

TEST(Sampling, ArgmaxTakesTheLowestIndexOfTies) {
  const std::vector<float> a = {0.5f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(argmax(a.data(), 4), 1);
  const std::vector<double> b = {-3.0, -3.0};
  EXPECT_EQ(argmax(b.data(), 2), 0);
  const std::vector<double> c = {-kInf, -kInf, 1.0};
  EXPECT_EQ(argmax(c.data(), 3), 2);
}

TEST(Sampling, TemperatureDividesTheScores) {
  std::vector<double> s = {1.0, -2.0, 0.5};
  apply_warpers(s, {0.5, 0, 1.0});
  EXPECT_EQ(s, (std::vector<double>{2.0, -4.0, 1.0}));
}

TEST(Sampling, TopKKeepsTheKLargestAndTheirTies) {
  std::vector<double> s = {0.1, 3.0, 2.0, -1.0, 2.0, 0.5};
  apply_warpers(s, {1.0, 2, 1.0});
  EXPECT_EQ(kept(s), (std::vector<bool>{false, true, true, false, true, false}));  // 2.0 ties with the 2nd
  EXPECT_EQ(s[1], 3.0);  // kept scores are untouched
  std::vector<double> all = {1.0, 2.0};
  apply_warpers(all, {1.0, 5, 1.0});  // k beyond V keeps everything
  EXPECT_EQ(kept(all), (std::vector<bool>{true, true}));
}

TEST(Sampling, TopPKeepsTheSmallestSetReachingP) {
  // Probabilities 0.05, 0.5, 0.15, 0.3: from the bottom the cumulative sums are 0.05, 0.2, 0.5, 1.
  const std::vector<double> p = {0.05, 0.5, 0.15, 0.3};
  std::vector<double> s = log_probs(p);
  apply_warpers(s, {1.0, 0, 0.75});  // removes cumulative <= 0.25: 0.05 and 0.15
  EXPECT_EQ(kept(s), (std::vector<bool>{false, true, false, true}));
  s = log_probs(p);
  apply_warpers(s, {1.0, 0, 0.9});  // removes cumulative <= 0.1: 0.05 only
  EXPECT_EQ(kept(s), (std::vector<bool>{false, true, true, true}));
  s = log_probs(p);
  apply_warpers(s, {1.0, 0, 1e-9});  // min_tokens_to_keep 1: the largest stays
  EXPECT_EQ(kept(s), (std::vector<bool>{false, true, false, false}));
}

TEST(Sampling, WarpersRunInHfOrder) {
  // Temperature first: at T = 0.5 probabilities (0.5, 0.3, 0.2) sharpen to (0.66, 0.24, 0.11),
  // so top_p 0.85 (remove cumulative <= 0.15) drops the last token, which it keeps at T = 1.
  std::vector<double> s = log_probs({0.5, 0.3, 0.2});
  apply_warpers(s, {1.0, 0, 0.85});
  EXPECT_EQ(kept(s), (std::vector<bool>{true, true, true}));
  s = log_probs({0.5, 0.3, 0.2});
  apply_warpers(s, {0.5, 0, 0.85});
  EXPECT_EQ(kept(s), (std::vector<bool>{true, true, false}));
  // Top-k before top-p: top_p sees the distribution renormalised over the k kept, (0.57, 0.43),
  // and removes 0.43 <= 0.5; on the whole distribution it would keep 0.3 as well.
  s = log_probs({0.4, 0.3, 0.2, 0.1});
  apply_warpers(s, {1.0, 0, 0.5});
  EXPECT_EQ(kept(s), (std::vector<bool>{true, true, false, false}));
  s = log_probs({0.4, 0.3, 0.2, 0.1});
  apply_warpers(s, {1.0, 2, 0.5});
  EXPECT_EQ(kept(s), (std::vector<bool>{true, false, false, false}));
}

TEST(Sampling, DrawsFollowTheCdfAndNeverPickRemovedTokens) {
  const std::vector<double> s = {std::log(0.25), -kInf, std::log(0.5), std::log(0.25)};
  EXPECT_EQ(sample_index(s, 0.0), 0);
  EXPECT_EQ(sample_index(s, 0.2499), 0);
  EXPECT_EQ(sample_index(s, 0.2501), 2);
  EXPECT_EQ(sample_index(s, 0.7499), 2);
  EXPECT_EQ(sample_index(s, 0.7501), 3);
  EXPECT_EQ(sample_index(s, std::nextafter(1.0, 0.0)), 3);
  // Frequencies from the counter RNG: 40000 draws within 4 standard deviations.
  const CounterRng rng(5, 0);
  int counts[4] = {};
  const int n = 40000;
  for (int i = 0; i < n; ++i) ++counts[sample_index(s, rng.uniform53(static_cast<uint64_t>(i)))];
  EXPECT_EQ(counts[1], 0);
  const double p[4] = {0.25, 0, 0.5, 0.25};
  for (int i : {0, 2, 3}) EXPECT_NEAR(counts[i] / double(n), p[i], 4 * std::sqrt(p[i] * (1 - p[i]) / n)) << i;
}

}  // namespace
}  // namespace strata::gen
