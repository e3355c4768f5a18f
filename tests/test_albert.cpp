// ALBERT: whole-model gradients against central finite differences in fp64 (shared layer
// groups, so every shared gradient is a sum over repeats; once with dropout on), the
// gradients-final hook with shared parameters, infer() against forward(), and the config
// check on num_hidden_groups. HF parity itself is in test_hf_parity.cpp (fixtures albert-*).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iterator>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/albert/albert_model.h"
#include "models/batch_checks.h"
#include "models/config.h"
#include "util/error.h"

namespace strata {
namespace {

using nlohmann::json;

const char* class_name(Task t) {
  switch (t) {
    case Task::SequenceClassification: return "AlbertForSequenceClassification";
    case Task::MaskedLM: return "AlbertForMaskedLM";
    case Task::TokenClassification: return "AlbertForTokenClassification";
    case Task::QuestionAnswering: return "AlbertForQuestionAnswering";
    case Task::PreTraining: return "AlbertForPreTraining";
    default: return "AlbertModel";
  }
}

// A tiny AlbertConfig as HF writes it. embedding_size != hidden_size so the factorisation
// (E -> H mapping, H -> E MLM dense) is exercised; initializer_range 0.2 keeps the model far
// from linear (see test_models.cpp).
json tiny_json(Task task, float dropout, int layers = 2, int groups = 1, int inner = 1) {
  json j;
  j["architectures"] = {class_name(task)};
  j["model_type"] = "albert";
  j["vocab_size"] = 37;
  j["embedding_size"] = 6;
  j["hidden_size"] = 8;
  j["num_hidden_layers"] = layers;
  j["num_hidden_groups"] = groups;
  j["inner_group_num"] = inner;
  j["num_attention_heads"] = 2;
  j["intermediate_size"] = 16;
  j["max_position_embeddings"] = 16;
  j["hidden_act"] = "gelu_new";
  j["hidden_dropout_prob"] = dropout;
  j["attention_probs_dropout_prob"] = dropout;
  j["classifier_dropout_prob"] = dropout;
  j["type_vocab_size"] = 2;
  j["pad_token_id"] = 0;
  j["initializer_range"] = 0.2;
  if (task == Task::SequenceClassification || task == Task::TokenClassification) j["num_labels"] = 3;
  return j;
}

ModelConfig tiny_config(Task task, float dropout, int layers = 2, int groups = 1, int inner = 1) {
  return parse_model_config(tiny_json(task, dropout, layers, groups, inner), "tiny albert config.json");
}

// As test_models.cpp's make_batch: odd rows end in padding, real tokens never use the pad id,
// padded positions carry no label.
Batch make_batch(const ModelConfig& c, int B, int T, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform_int = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi - 1)(rng); };
  Batch b;
  b.B = B;
  b.T = T;
  const bool per_token = c.task == Task::MaskedLM || c.task == Task::PreTraining || c.task == Task::TokenClassification;
  const int classes = c.task == Task::TokenClassification ? c.num_labels : c.vocab_size;
  for (int r = 0; r < B; ++r) {
    const int len = r % 2 ? T - T / 3 : T;
    for (int t = 0; t < T; ++t) {
      const bool real = t < len;
      int id = uniform_int(0, c.vocab_size - 1);
      if (id >= c.pad_token_id) ++id;
      b.input_ids.push_back(real ? id : c.pad_token_id);
      b.attention_mask.push_back(real);
      b.token_type_ids.push_back(real && t >= len / 2);
      if (per_token) b.labels.push_back(real && t % 3 != 0 ? uniform_int(0, classes) : -100);
    }
    if (c.task == Task::SequenceClassification) b.labels.push_back(uniform_int(0, c.num_labels));
    if (c.task == Task::PreTraining) b.sentence_order_label.push_back(r % 2);
    if (c.task == Task::QuestionAnswering) {
      const int s = uniform_int(0, len), e = uniform_int(s, len);
      b.start_positions.push_back(s);
      b.end_positions.push_back(e);
    }
  }
  check_batch(c, b, "generated batch");
  return b;
}

void perturb(Model<double>& m, uint64_t seed, double scale) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-scale, scale);
  for (size_t i = 0; i < m.table().total(); ++i) m.params()[i] += u(rng);
}

double compute_gradients(Model<double>& m, const Batch& b, const nn::DropoutCtx& drop, ModelState& st) {
  m.forward(b, drop, st);
  const double loss = m.loss(b, st).loss;
  m.grads().zero();
  m.backward(b, drop, st);
  return loss;
}

// The criterion of test_models.cpp (see there for why these bounds).
constexpr double kStep = 1e-6;
constexpr double kRelTol = 1e-6;
constexpr double kTensorTol = 1e-7;
constexpr double kNoiseUlps = 64;
constexpr double kMinTensorGrad = 1e-5;
constexpr size_t kSamplesPerTensor = 20;
constexpr size_t kSmallTensor = 64;

// Key biases (softmax is shift-invariant) and QA's start/end biases (each softmax row's
// gradient sums to zero) have an exactly vanishing gradient.
bool gradient_is_zero_by_construction(const std::string& name) {
  return name.ends_with("attention.key.bias") || name == "qa_outputs.bias";
}

double central_difference(Model<double>& m, const Batch& b, const nn::DropoutCtx& drop, ModelState& st, size_t i) {
  double& p = m.params()[i];
  const double saved = p;
  auto loss_at = [&](double v) {
    p = v;
    m.forward(b, drop, st);
    return m.loss(b, st).loss;
  };
  const double up = saved + kStep, down = saved - kStep;
  const double n = (loss_at(up) - loss_at(down)) / (up - down);
  p = saved;
  return n;
}

// The pad row of the word embeddings gets no input gradient by design (nn.Embedding(padding_idx),
// as in HF), although pad tokens reach a QA loss through the logits of padded positions (HF
// does not mask them): in QA that row is checked to be exactly zero, not against the difference.
// (Elsewhere padded positions cannot reach the loss, and the MLM decoder's tied gradient of
// that row is checked as usual.)
void expect_gradients_match_finite_differences(Model<double>& m, const Batch& b, const nn::DropoutCtx& drop) {
  auto st = m.new_state();
  const double noise =
      kNoiseUlps * std::numeric_limits<double>::epsilon() * std::abs(compute_gradients(m, b, drop, *st)) / kStep;
  const std::vector<double> analytic(m.grads().data(), m.grads().data() + m.table().total());
  std::mt19937_64 rng(2024);
  for (const ParamEntry& e : m.table().entries()) {
    const double* g = analytic.data() + e.offset;
    double G = 0;
    for (size_t i = 0; i < e.numel; ++i) G = std::max(G, std::abs(g[i]));
    if (gradient_is_zero_by_construction(e.name))
      EXPECT_LT(G, 1e-12) << e.name;
    else
      EXPECT_GT(G, kMinTensorGrad) << e.name << ": no gradient reaches this parameter";
    std::vector<size_t> checked(e.numel);
    std::iota(checked.begin(), checked.end(), size_t{0});
    if (e.numel > kSmallTensor) {
      std::vector<size_t> picked;
      std::sample(checked.begin(), checked.end(), std::back_inserter(picked), kSamplesPerTensor, rng);
      checked = picked;
    }
    size_t bad = 0;
    double worst_ratio = 0;
    std::string worst;
    const bool word_table =
        m.config().task == Task::QuestionAnswering && e.name.ends_with("word_embeddings.weight");
    const size_t cols = word_table ? static_cast<size_t>(e.shape[1]) : 1;
    const size_t pad = static_cast<size_t>(m.config().pad_token_id);
    for (size_t i : checked) {
      if (word_table && i / cols == pad) {
        EXPECT_EQ(g[i], 0.0) << e.name << "[" << i << "]: the padding row must get no gradient";
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

struct GradCase {
  Task task;
  int layers, groups, inner;
};

std::string grad_case_name(const ::testing::TestParamInfo<GradCase>& info) {
  const GradCase& c = info.param;
  std::string t = task_name(c.task);
  std::replace(t.begin(), t.end(), '-', '_');
  return t + "_L" + std::to_string(c.layers) + "G" + std::to_string(c.groups) + "I" + std::to_string(c.inner);
}

class AlbertGradCheck : public ::testing::TestWithParam<GradCase> {};

TEST_P(AlbertGradCheck, EveryParameterMatchesCentralDifferences) {
  const GradCase& gc = GetParam();
  const ModelConfig c = tiny_config(gc.task, 0.0f, gc.layers, gc.groups, gc.inner);
  AlbertModel<double> m(c);
  m.init_weights(7);
  perturb(m, 8, 0.05);
  expect_gradients_match_finite_differences(m, make_batch(c, 2, 6, 9), nn::DropoutCtx{false, 0});
}

// 2 layers in 1 group: both repeats share every block parameter. 4 layers in 2 groups: each
// group used by two consecutive repeats. 2 inner layers: a group's layers applied in sequence
// on each repeat.
INSTANTIATE_TEST_SUITE_P(Albert, AlbertGradCheck,
                         ::testing::Values(GradCase{Task::MaskedLM, 2, 1, 1},
                                           GradCase{Task::SequenceClassification, 2, 1, 1},
                                           GradCase{Task::PreTraining, 2, 1, 1},
                                           GradCase{Task::TokenClassification, 2, 1, 1},
                                           GradCase{Task::QuestionAnswering, 2, 1, 1},
                                           GradCase{Task::SequenceClassification, 4, 2, 1},
                                           GradCase{Task::SequenceClassification, 2, 1, 2}),
                         grad_case_name);

// With dropout on, every mask is a function of (seed, stream, index): still a deterministic,
// differentiable loss. The streams are per repeat, so the two repeats of the shared layer
// draw different masks; pretraining also covers the SOP classifier's dropout.
TEST(AlbertDropoutGradCheck, SharedLayersWithAllDropoutsMatchCentralDifferences) {
  const ModelConfig c = tiny_config(Task::PreTraining, 0.1f);
  AlbertModel<double> m(c);
  m.init_weights(17);
  perturb(m, 18, 0.05);
  const Batch b = make_batch(c, 2, 6, 19);
  const nn::DropoutCtx drop{true, 1234};
  auto st = m.new_state();
  m.forward(b, nn::DropoutCtx{false, 0}, *st);
  const double loss_eval = m.loss(b, *st).loss;
  m.forward(b, drop, *st);
  ASSERT_NE(m.loss(b, *st).loss, loss_eval);
  expect_gradients_match_finite_differences(m, b, drop);
}

// Shared parameters are final only after their last use in backward (the group's first
// repeat): one hook call per group, after every repeat reading it has run.
TEST(AlbertGradsFinal, SharedGroupIsDeclaredFinalOnceAfterItsFirstRepeat) {
  const ModelConfig c = tiny_config(Task::SequenceClassification, 0.0f, 4, 2, 1);
  AlbertModel<double> m(c);
  m.init_weights(3);
  const Batch b = make_batch(c, 2, 6, 4);
  auto st = m.new_state();
  m.forward(b, nn::DropoutCtx{false, 0}, *st);
  m.loss(b, *st);
  std::vector<size_t> calls;
  m.backward(b, nn::DropoutCtx{false, 0}, *st, false, [&](size_t off) { calls.push_back(off); });
  const size_t group0 = m.table().at("albert.encoder.albert_layer_groups.0.albert_layers.0.attention.query.weight").offset;
  const size_t group1 = m.table().at("albert.encoder.albert_layer_groups.1.albert_layers.0.attention.query.weight").offset;
  const size_t head = m.table().at("albert.pooler.weight").offset;
  EXPECT_EQ(calls, (std::vector<size_t>{head, group1, group0, 0}));
  // Each repeat lists its group's entries.
  EXPECT_EQ(m.unit_parameters(1), m.unit_parameters(2));
  EXPECT_EQ(m.unit_parameters(3), m.unit_parameters(4));
  EXPECT_NE(m.unit_parameters(1), m.unit_parameters(3));
}

TEST(AlbertInfer, MatchesTrainingForwardWithoutDropout) {
  for (Task t : {Task::PreTraining, Task::QuestionAnswering}) {
    const ModelConfig c = tiny_config(t, 0.1f, 4, 2, 2);
    AlbertModel<double> m(c);
    m.init_weights(5);
    const Batch b = make_batch(c, 3, 7, 6);
    auto train = m.new_state(), inf = m.new_state();
    m.forward(b, nn::DropoutCtx{false, 0}, *train);
    m.infer(b, *inf);
    const auto a = m.head_outputs(b, *train), o = m.head_outputs(b, *inf);
    ASSERT_EQ(a.size(), 2u);
    ASSERT_EQ(a.size(), o.size());
    for (size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(a[k].name, o[k].name);
      size_t n = 1;
      for (int64_t d : a[k].shape) n *= static_cast<size_t>(d);
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(a[k].data[i], o[k].data[i]) << a[k].name << "[" << i << "]";
    }
  }
}

TEST(AlbertConfig, LayersNotDivisibleByGroupsAreRefused) {
  try {
    tiny_config(Task::MaskedLM, 0.0f, 3, 2, 1);
    FAIL() << "a config with 3 layers in 2 groups was accepted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("tiny albert config.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("num_hidden_layers (3) is not divisible by num_hidden_groups (2)"), std::string::npos) << msg;
  }
}

TEST(AlbertConfig, PretrainingNamesBothOutputsAndNeedsSentenceOrderLabels) {
  const ModelConfig c = tiny_config(Task::PreTraining, 0.0f);
  AlbertModel<double> m(c);
  m.init_weights(1);
  Batch b = make_batch(c, 2, 5, 2);
  auto st = m.new_state();
  m.forward(b, nn::DropoutCtx{false, 0}, *st);
  const auto outs = m.head_outputs(b, *st);
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].name, "prediction_logits");
  EXPECT_EQ(outs[0].shape, (std::vector<int64_t>{2, 5, 37}));
  EXPECT_EQ(outs[1].name, "sop_logits");
  EXPECT_EQ(outs[1].shape, (std::vector<int64_t>{2, 2}));
  b.sentence_order_label.clear();
  EXPECT_THROW(m.loss(b, *st), Error);
}

}  // namespace
}  // namespace strata
