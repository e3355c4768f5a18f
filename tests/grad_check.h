// Whole-model gradients against central finite differences in fp64, one criterion for every
// architecture's test file (test_models, test_gpt2, test_albert).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iomanip>
#include <iterator>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/batch.h"
#include "models/model.h"
#include "util/error.h"

namespace strata::test {

// Criterion, per checked element with analytic a and central difference n:
//   |a - n| <= kRelTol * max(|a|, |n|) + kTensorTol * G + kNoiseUlps * eps * |loss| / h
// G is the largest |analytic gradient| in that tensor; the last term is the rounding noise of
// the difference quotient (a few ulps of the loss, amplified by 1/h). In fp64 with h = 1e-6
// truncation is ~h^2, so a correct backward lands ~100x inside these bounds, while a wrong
// term, a missing contribution or a factor error fails by orders of magnitude. G must also be
// non-trivial, so no tensor passes vacuously with a zero gradient everywhere.
constexpr double kStep = 1e-6;
constexpr double kRelTol = 1e-6;
constexpr double kTensorTol = 1e-7;
constexpr double kNoiseUlps = 64;
constexpr double kMinTensorGrad = 1e-5;
constexpr size_t kSamplesPerTensor = 20;  // tensors up to kSmallTensor elements are checked whole
constexpr size_t kSmallTensor = 64;

inline double fd_noise(double loss) {
  return kNoiseUlps * std::numeric_limits<double>::epsilon() * std::abs(loss) / kStep;
}

inline std::vector<size_t> sample_indices(size_t numel, std::mt19937_64& rng) {
  std::vector<size_t> all(numel);
  std::iota(all.begin(), all.end(), size_t{0});
  if (numel <= kSmallTensor) return all;
  std::vector<size_t> picked;
  std::sample(all.begin(), all.end(), std::back_inserter(picked), kSamplesPerTensor, rng);
  return picked;
}

// The loss of a forward pass through the whole model, in a state of its own.
inline double forward_loss(const Model<double>& m, const Batch& b, const nn::DropoutCtx& drop) {
  auto st = m.new_state();
  m.forward(b, drop, *st);
  return m.loss(b, *st).loss;
}

// Fills m.grads() with d(loss)/d(params); returns the loss.
inline double compute_gradients(Model<double>& m, const Batch& b, const nn::DropoutCtx& drop, ModelState& st) {
  m.forward(b, drop, st);
  const double loss = m.loss(b, st).loss;
  m.grads().zero();
  m.backward(b, drop, st);
  return loss;
}

inline double central_difference(Model<double>& m, const Batch& b, const nn::DropoutCtx& drop, ModelState& st,
                                 size_t index) {
  double& p = m.params()[index];
  const double saved = p;
  auto loss_at = [&](double v) {
    p = v;
    m.forward(b, drop, st);
    return m.loss(b, st).loss;
  };
  const double up = saved + kStep, down = saved - kStep;
  const double n = (loss_at(up) - loss_at(down)) / (up - down);  // the step as represented
  p = saved;
  return n;
}

// Gradients that are exactly zero by construction, which an architecture's test names.
struct ZeroGradients {
  // Whole tensors (e.g. attention key biases, which softmax ignores): the analytic gradient must
  // be zero (< 1e-12) instead of non-trivial; their elements are still differenced.
  std::function<bool(const std::string& name)> tensor = {};
  // Single elements whose analytic gradient must be exactly 0 although the loss does depend on
  // them (e.g. a padding row HF deliberately cuts off): not differenced.
  std::function<bool(const ParamEntry& e, size_t i)> element = {};
};

inline void expect_gradients_match_finite_differences(Model<double>& m, const Batch& b, const nn::DropoutCtx& drop,
                                                      const ZeroGradients& zero = {}) {
  auto st = m.new_state();
  const double noise = fd_noise(compute_gradients(m, b, drop, *st));
  const std::vector<double> analytic(m.grads().data(), m.grads().data() + m.table().total());
  std::mt19937_64 rng(2024);
  for (const ParamEntry& e : m.table().entries()) {
    const double* g = analytic.data() + e.offset;
    double G = 0;
    for (size_t i = 0; i < e.numel; ++i) G = std::max(G, std::abs(g[i]));
    if (zero.tensor && zero.tensor(e.name))
      EXPECT_LT(G, 1e-12) << e.name;
    else
      EXPECT_GT(G, kMinTensorGrad) << e.name << ": no gradient reaches this parameter";
    // One verdict per tensor (count and worst element), not one per element, so that a broken
    // backward reports which tensors it breaks instead of thousands of lines.
    const std::vector<size_t> checked = sample_indices(e.numel, rng);
    size_t bad = 0;
    double worst_ratio = 0;
    std::string worst;
    for (size_t i : checked) {
      if (zero.element && zero.element(e, i)) {
        EXPECT_EQ(g[i], 0.0) << e.name << "[" << i << "]: the gradient must be exactly zero";
        continue;
      }
      const double n = central_difference(m, b, drop, *st, e.offset + i);
      const double tol = kRelTol * std::max(std::abs(g[i]), std::abs(n)) + kTensorTol * G + noise;
      const double ratio = std::abs(g[i] - n) / tol;
      bad += ratio > 1;
      if (ratio > worst_ratio) {
        worst_ratio = ratio;
        worst = cat("[", i, "] analytic ", std::setprecision(12), g[i], " numeric ", n, " tolerance ", tol);
      }
    }
    EXPECT_EQ(bad, 0u) << e.name << ": " << bad << " of " << checked.size() << " elements outside tolerance; worst "
                       << worst << " (tensor max |grad| " << G << ")";
  }
}

// The same check with every dropout on: each mask is a function of (seed, stream, index), so the
// loss is still a deterministic, differentiable function of the parameters. Dropout must change
// the loss, or this would repeat the check without it.
inline void expect_gradients_match_finite_differences_with_dropout(Model<double>& m, const Batch& b,
                                                                   const ZeroGradients& zero = {}) {
  const nn::DropoutCtx drop{true, 1234};
  ASSERT_NE(forward_loss(m, b, drop), forward_loss(m, b, nn::DropoutCtx{false, 0}))
      << "dropout must change the computation";
  expect_gradients_match_finite_differences(m, b, drop, zero);
}

}  // namespace strata::test
