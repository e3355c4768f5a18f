// GPT-2 model tests: whole-model gradients against central differences (fp64, dropout on)
// for every head, forward/backward over split unit ranges against the whole model, infer()
// against forward(), and refused configurations. HF parity is in test_hf_parity.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grad_check.h"
#include "models/batch_checks.h"
#include "models/config.h"
#include "models/gpt2/gpt2_model.h"
#include "models/pretrained.h"
#include "test_util_fs.h"
#include "test_util_model.h"
#include "util/error.h"

namespace strata {
namespace {

using nlohmann::json;
using test::expect_gradients_match_finite_differences_with_dropout;
using test::init_perturbed;
using test::uniform_int;

const char* class_name(Task t) {
  switch (t) {
    case Task::CausalLM: return "GPT2LMHeadModel";
    case Task::SequenceClassification: return "GPT2ForSequenceClassification";
    case Task::TokenClassification: return "GPT2ForTokenClassification";
    default: return "GPT2Model";
  }
}

// A GPT2Config as HF writes it, tiny, every dropout probability `dropout`. initializer_range
// 0.2 keeps the tiny model far from linear (as in test_models.cpp).
json tiny_gpt2_json(Task task, float dropout) {
  json j;
  j["model_type"] = "gpt2";
  j["architectures"] = {class_name(task)};
  j["vocab_size"] = 23;
  j["n_positions"] = 16;
  j["n_embd"] = 8;
  j["n_layer"] = 2;
  j["n_head"] = 2;
  j["n_inner"] = nullptr;
  j["activation_function"] = "gelu_new";
  j["layer_norm_epsilon"] = 1e-5;
  j["resid_pdrop"] = dropout;
  j["embd_pdrop"] = dropout;
  j["attn_pdrop"] = dropout;
  j["classifier_dropout"] = dropout;
  j["initializer_range"] = 0.2;
  j["scale_attn_weights"] = true;
  j["pad_token_id"] = 0;
  if (task != Task::CausalLM && task != Task::Base) j["num_labels"] = 3;
  return j;
}

ModelConfig tiny_gpt2(Task task, float dropout) {
  return parse_model_config(tiny_gpt2_json(task, dropout), "tiny gpt2 config.json");
}

// test_util_model.h's padded_batch (pad id 0). Real tokens never use the pad id, so sequence
// classification pools each row's last real token.
Batch make_batch(const ModelConfig& c, int B, int T, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Batch b = test::padded_batch(c, B, T, rng, [&](Batch& out, int, bool real, int id) {
    if (c.task == Task::CausalLM) out.labels.push_back(real ? id : -100);
    if (c.task == Task::TokenClassification) out.labels.push_back(real ? uniform_int(rng, 0, c.num_labels) : -100);
  });
  if (c.task == Task::SequenceClassification)
    for (int r = 0; r < B; ++r) b.labels.push_back(uniform_int(rng, 0, c.num_labels));
  check_batch(c, b, "generated batch");
  return b;
}

class Gpt2GradCheck : public ::testing::TestWithParam<Task> {};

// Dropout on everywhere (embeddings, attention probabilities, both residual branches, the
// token-classification head): masks are functions of (seed, stream, index), so the loss is a
// deterministic, differentiable function of the parameters.
TEST_P(Gpt2GradCheck, EveryParameterMatchesCentralDifferencesWithDropout) {
  const ModelConfig c = tiny_gpt2(GetParam(), 0.1f);
  Gpt2Model<double> m(c);
  init_perturbed(m, 17);
  expect_gradients_match_finite_differences_with_dropout(m, make_batch(c, 2, 6, 19));
}

INSTANTIATE_TEST_SUITE_P(Gpt2, Gpt2GradCheck,
                         ::testing::Values(Task::CausalLM, Task::SequenceClassification, Task::TokenClassification),
                         [](const ::testing::TestParamInfo<Task>& info) {
                           std::string n = task_name(info.param);
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// ---- unit ranges -----------------------------------------------------------------------

// Forward over [0, k) then [k, L+2) with separate states (as two pipeline stages would hold
// them) equals the whole forward, and backward through the two ranges equals the whole
// backward, bit for bit, for every split point.
TEST(Gpt2Units, SplitForwardAndBackwardEqualTheWholeModel) {
  for (Task task : {Task::CausalLM, Task::SequenceClassification}) {
    SCOPED_TRACE(task_name(task));
    const ModelConfig c = tiny_gpt2(task, 0.1f);
    Gpt2Model<double> m(c);
    init_perturbed(m, 3);
    const Batch b = make_batch(c, 3, 7, 5);
    const nn::DropoutCtx drop{true, 99};

    auto whole = m.new_state();
    m.forward(b, drop, *whole);
    const double loss = m.loss(b, *whole).loss;
    const auto out = m.head_outputs(b, *whole).at(0);
    const size_t n_out = std::accumulate(out.shape.begin(), out.shape.end(), size_t{1}, std::multiplies<size_t>());
    const std::vector<double> logits(out.data, out.data + n_out);
    m.grads().zero();
    m.backward(b, drop, *whole);
    const std::vector<double> grads(m.grads().data(), m.grads().data() + m.table().total());

    for (int k = 1; k < m.num_units(); ++k) {
      SCOPED_TRACE(cat("split at unit ", k));
      auto first = m.new_state(), second = m.new_state();
      const double* h = m.forward(b, drop, UnitRange{0, k}, nullptr, *first);
      m.forward(b, drop, UnitRange{k, m.num_units()}, h, *second);
      EXPECT_EQ(m.loss(b, *second).loss, loss);
      const auto out2 = m.head_outputs(b, *second).at(0);
      EXPECT_EQ(std::vector<double>(out2.data, out2.data + n_out), logits);
      m.grads().zero();
      const double* d = m.backward(b, drop, UnitRange{k, m.num_units()}, nullptr, *second);
      ASSERT_NE(d, nullptr);
      EXPECT_EQ(m.backward(b, drop, UnitRange{0, k}, d, *first), nullptr);
      EXPECT_EQ(std::vector<double>(m.grads().data(), m.grads().data() + m.table().total()), grads);
    }
  }
}

// infer() keeps two block slots only and must give forward()'s outputs (no dropout).
TEST(Gpt2Units, InferEqualsForwardWithoutDropout) {
  for (Task task : {Task::CausalLM, Task::SequenceClassification, Task::Base}) {
    SCOPED_TRACE(task_name(task));
    const ModelConfig c = tiny_gpt2(task, 0.1f);
    Gpt2Model<double> m(c);
    m.init_weights(6);
    const Batch b = make_batch(c, 2, 5, 7);
    auto s1 = m.new_state(), s2 = m.new_state();
    const double* y1 = m.forward(b, nn::DropoutCtx{false, 0}, *s1);
    const double* y2 = m.infer(b, *s2);
    const size_t n = task == Task::CausalLM                 ? size_t(b.B) * b.T * c.vocab_size
                     : task == Task::SequenceClassification ? size_t(b.B) * c.num_labels
                                                            : size_t(b.B) * b.T * c.hidden_size;
    EXPECT_EQ(std::vector<double>(y1, y1 + n), std::vector<double>(y2, y2 + n));
  }
}

// Causality: changing a later token leaves every earlier position's logits unchanged.
TEST(Gpt2Units, LogitsDoNotSeeLaterTokens) {
  const ModelConfig c = tiny_gpt2(Task::CausalLM, 0.0f);
  Gpt2Model<double> m(c);
  m.init_weights(8);
  Batch b = make_batch(c, 1, 6, 9);
  auto s = m.new_state();
  const double* y = m.infer(b, *s);
  const std::vector<double> before(y, y + size_t(4) * c.vocab_size);
  b.input_ids[4] = b.input_ids[4] % (c.vocab_size - 1) + 1;
  b.input_ids[5] = b.input_ids[5] % (c.vocab_size - 1) + 1;
  y = m.infer(b, *s);
  EXPECT_EQ(std::vector<double>(y, y + size_t(4) * c.vocab_size), before);
}

TEST(Gpt2Model, LmHeadIsTiedToWte) {
  const ModelConfig c = tiny_gpt2(Task::CausalLM, 0.0f);
  Gpt2Model<float> m(c);
  ASSERT_EQ(m.tied_aliases().size(), 1u);
  EXPECT_EQ(m.tied_aliases()[0].first, "lm_head.weight");
  EXPECT_EQ(m.tied_aliases()[0].second, "transformer.wte.weight");
  EXPECT_EQ(m.table().at("transformer.h.0.attn.c_attn.weight").shape, (std::vector<int64_t>{8, 24}));
  EXPECT_EQ(m.table().at("transformer.h.1.mlp.c_proj.weight").shape, (std::vector<int64_t>{32, 8}));
}

// ---- refused inputs ------------------------------------------------------------------

TEST(Gpt2BadInput, CrossAttentionIsRefusedNamingTheFile) {
  json j = tiny_gpt2_json(Task::CausalLM, 0.0f);
  j["add_cross_attention"] = true;
  test::expect_error([&] { parse_model_config(j, "/models/gpt2/config.json"); },
                     {"/models/gpt2/config.json", "add_cross_attention"});
}

TEST(Gpt2BadInput, UnsupportedAttentionVariantsAreRefused) {
  for (const char* key : {"scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn"}) {
    json j = tiny_gpt2_json(Task::CausalLM, 0.0f);
    j[key] = true;
    test::expect_error([&] { parse_model_config(j, "cfg.json"); }, {"cfg.json", key});
  }
}

// HF raises when GPT2ForSequenceClassification has no pad id and more than one row.
TEST(Gpt2BadInput, SequenceClassificationWithoutPadIdRefusesBatches) {
  json j = tiny_gpt2_json(Task::SequenceClassification, 0.0f);
  j.erase("pad_token_id");
  const ModelConfig c = parse_model_config(j, "cfg.json");
  EXPECT_EQ(c.pad_token_id, -1);
  Gpt2Model<float> m(c);
  m.init_weights(1);
  Batch b;
  b.B = 2;
  b.T = 3;
  b.input_ids = {1, 2, 3, 4, 5, 6};
  b.attention_mask.assign(6, 1);
  b.token_type_ids.assign(6, 0);
  auto s = m.new_state();
  test::expect_error([&] { m.infer(b, *s); }, {"pad_token_id", "GPT2ForSequenceClassification"});
  b.B = 1;  // a single row pools its last token
  b.input_ids.resize(3);
  b.attention_mask.resize(3);
  b.token_type_ids.resize(3);
  EXPECT_NE(m.infer(b, *s), nullptr);
}

}  // namespace
}  // namespace strata
