// The Model interface's contracts on real HF models (tests/fixtures): running units [0, k)
// and then [k, L+2) - as two pipeline stages would - or in three ranges gives the whole
// model's loss, outputs and gradients bit for bit, with dropout on (for BART and T5 the
// boundaries carry the encoder's output along the decoder and its gradient back, the T5
// fixtures' targets are shorter than their sources); and the inference forward equals the
// training forward without dropout (bit for bit, but for sequence classification's first-token
// last block: to rounding).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
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

// The model in ranges cut before each unit of `cuts` (ascending, inside 1..L+1; none: the
// whole model in one range), each with a state of its own, as pipeline stages run it.
StepResult run_split(Model<float>& m, const Batch& b, const std::vector<int>& cuts) {
  const nn::DropoutCtx drop{true, 1234};
  m.grads().zero();
  std::vector<UnitRange> ranges;
  int begin = 0;
  for (int c : cuts) ranges.push_back({std::exchange(begin, c), c});
  ranges.push_back({begin, m.num_units()});
  std::vector<std::unique_ptr<ModelState>> states;
  const float* h = nullptr;
  for (const UnitRange& r : ranges) {
    states.push_back(m.new_state());
    h = m.forward(b, drop, r, h, *states.back());
  }
  StepResult out;
  out.loss = m.loss(b, *states.back()).loss;
  out.outputs = copy_outputs(m, b, *states.back());
  const float* dh = nullptr;
  for (size_t i = ranges.size(); i-- > 0;) {
    dh = m.backward(b, drop, ranges[i], dh, *states[i]);
    EXPECT_EQ(dh == nullptr, i == 0);
  }
  out.grads.assign(m.grads().data(), m.grads().data() + m.grads().size());
  return out;
}

void expect_same_step(const StepResult& split, const StepResult& whole) {
  EXPECT_EQ(split.loss, whole.loss);
  ASSERT_EQ(split.outputs.size(), whole.outputs.size());
  for (size_t i = 0; i < whole.outputs.size(); ++i) EXPECT_EQ(split.outputs[i], whole.outputs[i]);
  EXPECT_EQ(0, std::memcmp(split.grads.data(), whole.grads.data(), whole.grads.size() * sizeof(float)));
}

class ModelRanges : public testing::TestWithParam<std::string> {};

TEST_P(ModelRanges, SplitAtEveryUnitEqualsTheWholeModel) {
  const std::string dir = test::fixture(GetParam());
  auto m = load_pretrained<float>(dir);
  const Batch b = read_batch_json(dir + ".inputs.json", m->config());
  const StepResult whole = run_split(*m, b, {});
  for (int k = 1; k < m->num_units(); ++k) {
    SCOPED_TRACE("split before unit " + std::to_string(k));
    expect_same_step(run_split(*m, b, {k}), whole);
  }
}

// The middle range of three takes a boundary and hands one on in both directions: for BART and
// T5 one of the encoder's, one of the decoder's (with the encoder's output), or one of each.
TEST_P(ModelRanges, ThreeRangesEqualTheWholeModel) {
  const std::string dir = test::fixture(GetParam());
  auto m = load_pretrained<float>(dir);
  const Batch b = read_batch_json(dir + ".inputs.json", m->config());
  const StepResult whole = run_split(*m, b, {});
  for (int j = 1; j < m->num_units(); ++j)
    for (int k = j + 1; k < m->num_units(); ++k) {
      SCOPED_TRACE("ranges [0, " + std::to_string(j) + "), [" + std::to_string(j) + ", " + std::to_string(k) +
                   "), [" + std::to_string(k) + ", end)");
      expect_same_step(run_split(*m, b, {j, k}), whole);
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
                                         "roberta-qa", "distilbert-token-cls", "bart-cond-gen", "bart-seq-cls",
                                         "t5-cond-gen", "t5-v1_1-cond-gen"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace strata
