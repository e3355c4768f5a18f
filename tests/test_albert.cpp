// ALBERT: whole-model gradients against central finite differences in fp64 (shared layer
// groups, so every shared gradient is a sum over repeats; once with dropout on), the
// gradients-final hook with shared parameters, infer() against forward(), and the config
// check on num_hidden_groups. HF parity itself is in test_hf_parity.cpp (fixtures albert-*).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grad_check.h"
#include "models/albert/albert_model.h"
#include "models/batch_checks.h"
#include "models/config.h"
#include "test_util_model.h"
#include "util/error.h"

namespace strata {
namespace {

using nlohmann::json;
using test::expect_gradients_match_finite_differences;
using test::expect_gradients_match_finite_differences_with_dropout;
using test::init_perturbed;
using test::uniform_int;

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
  json j = {{"architectures", {class_name(task)}}, {"model_type", "albert"}, {"vocab_size", 37},
            {"embedding_size", 6}, {"hidden_size", 8}, {"num_hidden_layers", layers}, {"num_hidden_groups", groups},
            {"inner_group_num", inner}, {"num_attention_heads", 2}, {"intermediate_size", 16},
            {"max_position_embeddings", 16}, {"hidden_act", "gelu_new"}, {"hidden_dropout_prob", dropout},
            {"attention_probs_dropout_prob", dropout}, {"classifier_dropout_prob", dropout}, {"type_vocab_size", 2},
            {"pad_token_id", 0}, {"initializer_range", 0.2}};
  if (task == Task::SequenceClassification || task == Task::TokenClassification) j["num_labels"] = 3;
  return j;
}

ModelConfig tiny_config(Task task, float dropout, int layers = 2, int groups = 1, int inner = 1) {
  return parse_model_config(tiny_json(task, dropout, layers, groups, inner), "tiny albert config.json");
}

// test_util_model.h's padded_batch; padded positions carry no label.
Batch make_batch(const ModelConfig& c, int B, int T, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const bool per_token = c.task == Task::MaskedLM || c.task == Task::PreTraining || c.task == Task::TokenClassification;
  const int classes = c.task == Task::TokenClassification ? c.num_labels : c.vocab_size;
  const auto position = [&](Batch& out, int t, bool real, int) {
    if (per_token) out.labels.push_back(real && t % 3 != 0 ? uniform_int(rng, 0, classes) : -100);
  };
  const auto row = [&](Batch& out, int r, int len) {
    if (c.task == Task::SequenceClassification) out.labels.push_back(uniform_int(rng, 0, c.num_labels));
    if (c.task == Task::PreTraining) out.sentence_order_label.push_back(r % 2);
    if (c.task == Task::QuestionAnswering) {
      const int s = uniform_int(rng, 0, len), e = uniform_int(rng, s, len);
      out.start_positions.push_back(s);
      out.end_positions.push_back(e);
    }
  };
  Batch b = test::padded_batch(c, B, T, rng, position, row);
  check_batch(c, b, "generated batch");
  return b;
}

// Key biases (softmax is shift-invariant) and QA's start/end biases (each softmax row's
// gradient sums to zero) have an exactly vanishing gradient. The pad row of the word
// embeddings gets no input gradient by design (nn.Embedding(padding_idx), as in HF), although
// pad tokens reach a QA loss through the logits of padded positions (HF does not mask them):
// in QA that row is checked to be exactly zero, not against the difference. (Elsewhere padded
// positions cannot reach the loss, and the MLM decoder's tied gradient of that row is checked
// as usual.)
test::ZeroGradients zero_gradients(const ModelConfig& c) {
  const bool qa = c.task == Task::QuestionAnswering;
  const size_t pad = static_cast<size_t>(c.pad_token_id);
  return {.tensor = [](const std::string& name) {
            return name.ends_with("attention.key.bias") || name == "qa_outputs.bias";
          },
          .element = [qa, pad](const ParamEntry& e, size_t i) {
            return qa && e.name.ends_with("word_embeddings.weight") && i / static_cast<size_t>(e.shape[1]) == pad;
          }};
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
  init_perturbed(m, 7);
  expect_gradients_match_finite_differences(m, make_batch(c, 2, 6, 9), nn::DropoutCtx{false, 0}, zero_gradients(c));
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
  init_perturbed(m, 17);
  expect_gradients_match_finite_differences_with_dropout(m, make_batch(c, 2, 6, 19), zero_gradients(c));
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
