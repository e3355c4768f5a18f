// The Model interface's contracts on real HF models (tests/fixtures): running units [0, k)
// and then [k, L+2) - as two pipeline stages would - gives the whole model's loss, outputs
// and gradients bit for bit, with dropout on; and the inference forward equals the training
// forward without dropout (bit for bit, but for sequence classification's first-token last
// block: to rounding).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "models/batch_json.h"
#include "models/pretrained.h"
#include "test_util_fs.h"

namespace strata {
namespace {

struct StepResult {
  double loss;
  std::vector<std::vector<float>> outputs;
  std::vector<float> grads;
};

std::vector<std::vector<float>> copy_outputs(const Model<float>& m, const Batch& b, const ModelState& s) {
  std::vector<std::vector<float>> out;
  for (const HeadOutput<float>& o : m.head_outputs(b, s)) {
    size_t n = 1;
    for (int64_t d : o.shape) n *= static_cast<size_t>(d);
    out.emplace_back(o.data, o.data + n);
  }
  return out;
}

// Units [0, split) then [split, end); split 0 means the whole model in one range.
StepResult run_split(Model<float>& m, const Batch& b, int split) {
  const nn::DropoutCtx drop{true, 1234};
  m.grads().zero();
  StepResult r;
  if (split == 0) {
    const auto s = m.new_state();
    m.forward(b, drop, *s);
    r.loss = m.loss(b, *s).loss;
    r.outputs = copy_outputs(m, b, *s);
    m.backward(b, drop, *s);
  } else {
    const auto first = m.new_state(), second = m.new_state();
    const float* h = m.forward(b, drop, {0, split}, nullptr, *first);
    m.forward(b, drop, {split, m.num_units()}, h, *second);
    r.loss = m.loss(b, *second).loss;
    r.outputs = copy_outputs(m, b, *second);
    const float* dh = m.backward(b, drop, {split, m.num_units()}, nullptr, *second);
    EXPECT_NE(dh, nullptr);
    EXPECT_EQ(m.backward(b, drop, {0, split}, dh, *first), nullptr);
  }
  r.grads.assign(m.grads().data(), m.grads().data() + m.grads().size());
  return r;
}

class ModelRanges : public testing::TestWithParam<std::string> {};

TEST_P(ModelRanges, SplitAtEveryUnitEqualsTheWholeModel) {
  const std::string dir = test::fixture(GetParam());
  auto m = load_pretrained<float>(dir);
  const Batch b = read_batch_json(dir + ".inputs.json", m->config());
  const StepResult whole = run_split(*m, b, 0);
  for (int k = 1; k < m->num_units(); ++k) {
    SCOPED_TRACE("split before unit " + std::to_string(k));
    const StepResult split = run_split(*m, b, k);
    EXPECT_EQ(split.loss, whole.loss);
    ASSERT_EQ(split.outputs.size(), whole.outputs.size());
    for (size_t i = 0; i < whole.outputs.size(); ++i) EXPECT_EQ(split.outputs[i], whole.outputs[i]);
    EXPECT_EQ(0, std::memcmp(split.grads.data(), whole.grads.data(), whole.grads.size() * sizeof(float)));
  }
}

TEST_P(ModelRanges, InferenceEqualsTheTrainingForwardWithoutDropout) {
  const std::string dir = test::fixture(GetParam());
  auto m = load_pretrained<float>(dir);
  const Batch b = read_batch_json(dir + ".inputs.json", m->config());
  const auto trained = m->new_state(), inferred = m->new_state();
  m->forward(b, nn::DropoutCtx{false, 0}, *trained);
  m->infer(b, *inferred);
  const auto got = copy_outputs(*m, b, *inferred), want = copy_outputs(*m, b, *trained);
  if (m->config().task != Task::SequenceClassification) {
    EXPECT_EQ(got, want);
    return;
  }
  // Sequence classification runs the last block on the first positions only (one-row products
  // round differently): equal to fp32 rounding, relative to the largest logit.
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].size(), want[0].size());
  float largest = 0;
  for (float v : want[0]) largest = std::max(largest, std::fabs(v));
  for (size_t i = 0; i < want[0].size(); ++i) EXPECT_NEAR(got[0][i], want[0][i], 1e-5f * largest) << "logit " << i;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ModelRanges,
                         testing::Values("bert-masked-lm", "bert-seq-cls", "roberta-seq-cls", "distilbert-seq-cls",
                                         "roberta-qa", "distilbert-token-cls"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace strata
