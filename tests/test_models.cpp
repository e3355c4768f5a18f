// Model-level tests: whole-model gradients against finite differences (fp64), tied weights,
// save/load round trips and partial loads, thread-count determinism of a training step, and
// the `strata step` / `strata info` commands on the Hugging Face fixtures.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "grad_check.h"
#include "models/batch_json.h"
#include "io/files.h"
#include "io/safetensors.h"
#include "kernels/device.h"
#include "kernels/ops.h"
#include "models/batch_checks.h"
#include "models/config.h"
#include "models/bert/encoder_model.h"
#include "models/pretrained.h"
#include "test_util_fs.h"
#include "test_util_model.h"
#include "train/mixed_precision.h"
#include "train/optimizer.h"
#include "util/error.h"

namespace strata {
namespace {

using nlohmann::json;
using test::central_difference;
using test::compute_gradients;
using test::expect_gradients_match_finite_differences;
using test::expect_gradients_match_finite_differences_with_dropout;
using test::fd_noise;
using test::init_perturbed;
using test::kRelTol;
using test::ScratchDir;
using test::uniform_int;

enum class Family { Bert, Roberta, DistilBert };  // the encoder model_types under test
constexpr Family kAllFamilies[] = {Family::Bert, Family::Roberta, Family::DistilBert};

// ---- models and batches built in code ------------------------------------------------

struct Dims {
  int vocab, hidden, layers, heads, ffn, positions;
};
constexpr Dims kTiny{37, 8, 2, 2, 16, 16};
constexpr Dims kMedium{500, 64, 2, 4, 128, 64};

// The HF class name, spelled out here rather than taken from ModelConfig::architecture() so
// that the tests check it.
std::string arch_name(Family f, Task t) {
  const std::string prefix = f == Family::Bert ? "Bert" : f == Family::Roberta ? "Roberta" : "DistilBert";
  return prefix + (t == Task::Base ? "Model" : t == Task::MaskedLM ? "ForMaskedLM" : "ForSequenceClassification");
}

const char* family_tag(Family f) { return f == Family::Bert ? "bert" : f == Family::Roberta ? "roberta" : "distilbert"; }

// A config.json as HF writes it for each family, with every dropout probability set to `dropout`.
// initializer_range 0.2 (not HF's 0.02) makes the tiny models far from linear, so attention
// and LayerNorm gradients are not all near-degenerate.
json tiny_config_json(Family f, Task task, ProblemType problem, float dropout, const Dims& d = kTiny) {
  json j;
  j["architectures"] = {arch_name(f, task)};
  j["vocab_size"] = d.vocab;
  j["max_position_embeddings"] = d.positions;
  j["initializer_range"] = 0.2;
  if (f == Family::DistilBert) {
    j["model_type"] = "distilbert";
    j["dim"] = d.hidden;
    j["n_layers"] = d.layers;
    j["n_heads"] = d.heads;
    j["hidden_dim"] = d.ffn;
    j["activation"] = "gelu";
    j["dropout"] = dropout;
    j["attention_dropout"] = dropout;
    j["seq_classif_dropout"] = dropout;
    j["pad_token_id"] = 0;
  } else {
    const bool bert = f == Family::Bert;
    j["model_type"] = bert ? "bert" : "roberta";
    j["hidden_size"] = d.hidden;
    j["num_hidden_layers"] = d.layers;
    j["num_attention_heads"] = d.heads;
    j["intermediate_size"] = d.ffn;
    j["hidden_act"] = bert ? "gelu" : "gelu_new";  // RoBERTa's LM head still uses erf-GELU
    j["hidden_dropout_prob"] = dropout;
    j["attention_probs_dropout_prob"] = dropout;
    j["classifier_dropout"] = dropout;
    j["type_vocab_size"] = bert ? 2 : 1;
    j["pad_token_id"] = bert ? 0 : 1;
    j["layer_norm_eps"] = bert ? 1e-12 : 1e-5;
  }
  if (task == Task::SequenceClassification) {
    j["num_labels"] = problem == ProblemType::Regression ? 1 : 3;
    j["problem_type"] = problem_type_name(problem);
  }
  return j;
}

ModelConfig tiny_config(Family f, Task task, ProblemType problem, float dropout, const Dims& d = kTiny) {
  return parse_model_config(tiny_config_json(f, task, problem, dropout, d), "tiny config.json");
}

// The layout of test_util_model.h's padded_batch; padded positions carry no label, so they
// cannot reach the loss (their keys are masked), as in real batches.
Batch make_batch(const ModelConfig& c, int B, int T, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Batch b = test::padded_batch(c, B, T, rng, [&](Batch& out, int t, bool real, int) {
    if (c.task == Task::MaskedLM) out.labels.push_back(real && t % 3 != 0 ? uniform_int(rng, 0, c.vocab_size) : -100);
  });
  if (c.task == Task::SequenceClassification) {
    switch (c.problem_type) {
      case ProblemType::SingleLabel:
        for (int r = 0; r < B; ++r) b.labels.push_back(uniform_int(rng, 0, c.num_labels));
        break;
      case ProblemType::MultiLabel:
        for (int i = 0; i < B * c.num_labels; ++i)
          b.float_labels.push_back(static_cast<float>(uniform_int(rng, 0, 2)));
        break;
      case ProblemType::Regression:
        for (int i = 0; i < B * c.num_labels; ++i)
          b.float_labels.push_back(std::normal_distribution<float>(0.0f, 1.5f)(rng));
        break;
      case ProblemType::Unset: break;
    }
  }
  check_batch(c, b, "generated batch");
  return b;
}

// ---- finite-difference gradient check (criterion in grad_check.h) ----------------------

// Attention key biases add q.b_k to every score of a query row, which softmax ignores: their
// true gradient is exactly zero (HF keeps them all the same), so only the FD check applies.
const test::ZeroGradients kKeyBiases{.tensor = [](const std::string& name) {
  return name.ends_with("attention.self.key.bias") || name.ends_with("attention.k_lin.bias");
}};

struct HeadCase {
  Family family;
  Task task;
  ProblemType problem;
};

void PrintTo(const HeadCase& c, std::ostream* os) {
  *os << arch_name(c.family, c.task) << " " << problem_type_name(c.problem);
}

std::string head_case_name(const ::testing::TestParamInfo<HeadCase>& info) {
  const HeadCase& c = info.param;
  std::string head = c.task == Task::MaskedLM ? "masked_lm" : problem_type_name(c.problem);
  return std::string(family_tag(c.family)) + "_" + head;
}

class ModelsGradCheck : public ::testing::TestWithParam<HeadCase> {};

TEST_P(ModelsGradCheck, EveryParameterMatchesCentralDifferences) {
  const HeadCase& hc = GetParam();
  const ModelConfig c = tiny_config(hc.family, hc.task, hc.problem, 0.0f);
  EncoderModel<double> m(c);
  init_perturbed(m, 7);
  const Batch b = make_batch(c, 2, 6, 9);
  if (c.model_type == "bert") {
    ASSERT_NE(std::count(b.token_type_ids.begin(), b.token_type_ids.end(), 1), 0);  // token types are exercised
  }
  expect_gradients_match_finite_differences(m, b, nn::DropoutCtx{false, 0}, kKeyBiases);
}

std::vector<HeadCase> all_head_cases() {
  std::vector<HeadCase> cases;
  for (Family f : kAllFamilies) {
    for (ProblemType p : {ProblemType::SingleLabel, ProblemType::MultiLabel, ProblemType::Regression})
      cases.push_back({f, Task::SequenceClassification, p});
    cases.push_back({f, Task::MaskedLM, ProblemType::Unset});
  }
  return cases;
}

// The instantiation name starts with "Models" so that --gtest_filter='Models*' selects it.
INSTANTIATE_TEST_SUITE_P(Models, ModelsGradCheck, ::testing::ValuesIn(all_head_cases()), head_case_name);

TEST(ModelsDropoutGradCheck, BertWithAllDropoutsMatchesCentralDifferences) {
  const ModelConfig c = tiny_config(Family::Bert, Task::SequenceClassification, ProblemType::SingleLabel, 0.1f);
  EncoderModel<double> m(c);
  init_perturbed(m, 17);
  expect_gradients_match_finite_differences_with_dropout(m, make_batch(c, 2, 6, 19), kKeyBiases);
}

// ---- tied weights --------------------------------------------------------------------

TEST(ModelsTiedWeights, MaskedLMDecoderIsTheWordEmbedding) {
  const std::vector<std::pair<std::string, std::string>> expected[] = {
      {{"cls.predictions.decoder.weight", "bert.embeddings.word_embeddings.weight"},
       {"cls.predictions.decoder.bias", "cls.predictions.bias"}},
      {{"lm_head.decoder.weight", "roberta.embeddings.word_embeddings.weight"},
       {"lm_head.decoder.bias", "lm_head.bias"}},
      {{"vocab_projector.weight", "distilbert.embeddings.word_embeddings.weight"}},
  };
  for (int k = 0; k < 3; ++k) {
    const Family f = kAllFamilies[k];
    SCOPED_TRACE(family_tag(f));
    const ModelConfig c = tiny_config(f, Task::MaskedLM, ProblemType::Unset, 0.0f);
    EncoderModel<double> m(c);
    EXPECT_EQ(m.tied_aliases(), expected[k]);
    // Tied twins are aliases, not parameters of their own.
    for (const auto& [alias, target] : m.tied_aliases()) {
      EXPECT_EQ(m.table().find(alias), nullptr) << alias;
      EXPECT_NE(m.table().find(target), nullptr) << target;
    }
    EXPECT_TRUE(EncoderModel<double>(tiny_config(f, Task::SequenceClassification, ProblemType::SingleLabel, 0.0f))
                    .tied_aliases()
                    .empty());

    // A word-embedding row that no input token uses (the pad row among them: pads sit only at
    // masked, unlabelled positions) is reached only through the decoder, so its gradient is
    // the decoder's contribution alone: non-zero, and equal to the finite difference.
    init_perturbed(m, 21);
    const Batch b = make_batch(c, 2, 6, 23);
    std::vector<int> unused_rows = {c.pad_token_id};
    for (int v = 0; v < c.vocab_size && unused_rows.size() < 3; ++v)
      if (std::find(b.input_ids.begin(), b.input_ids.end(), v) == b.input_ids.end() && v != c.pad_token_id)
        unused_rows.push_back(v);
    ASSERT_EQ(unused_rows.size(), 3u);
    EncoderState<double> acts;
    const double noise = fd_noise(compute_gradients(m, b, nn::DropoutCtx{false, 0}, acts));
    const ParamEntry& word = m.table().at(expected[k][0].second);
    for (int row : unused_rows) {
      for (int col = 0; col < c.hidden_size; ++col) {
        const size_t i = word.offset + static_cast<size_t>(row) * c.hidden_size + col;
        const double a = m.grads()[i];
        EXPECT_NE(a, 0.0) << "row " << row << " col " << col;
        const double n = central_difference(m, b, nn::DropoutCtx{false, 0}, acts, i);
        EXPECT_NEAR(a, n, kRelTol * std::max(std::abs(a), std::abs(n)) + noise) << "row " << row << " col " << col;
      }
    }
  }
}

// ---- save / load ----------------------------------------------------------------------

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

template <typename T>
std::vector<std::string> param_names(const Model<T>& m) {
  std::vector<std::string> names;
  for (const ParamEntry& e : m.table().entries()) names.push_back(e.name);
  return names;
}

bool same_bytes(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

TEST(ModelsPretrained, SaveLoadRoundTripIsBitExact) {
  const ScratchDir scratch;
  for (Family f : kAllFamilies) {
    for (Task t : {Task::SequenceClassification, Task::MaskedLM}) {
      const std::string tag = std::string(family_tag(f)) + "_" + task_name(t);
      SCOPED_TRACE(tag);
      json j = tiny_config_json(f, t, ProblemType::MultiLabel, 0.1f);
      if (t == Task::SequenceClassification) {
        j["id2label"] = {{"0", "sports"}, {"1", "politics"}, {"2", "science"}};
        j["label2id"] = {{"sports", 0}, {"politics", 1}, {"science", 2}};
      }
      j["a_field_strata_does_not_read"] = {1, "two"};  // HF configs carry many; saving must keep them
      EncoderModel<float> m(parse_model_config(j, "tiny config.json"));
      init_perturbed(m, 31);
      const std::string dir = scratch.path(tag);
      save_pretrained(m, dir);

      LoadReport report;
      const auto loaded = load_pretrained<float>(dir, &report);
      EXPECT_TRUE(report.missing.empty()) << joined(report.missing);
      EXPECT_TRUE(report.unexpected.empty()) << joined(report.unexpected);
      ASSERT_EQ(param_names(*loaded), param_names(m));
      EXPECT_TRUE(same_bytes(loaded->params().data(), m.params().data(), m.table().total()));
      EXPECT_EQ(loaded->config().model_type, family_tag(f));
      EXPECT_EQ(loaded->config().task, t);

      const json saved = io::read_json_file(dir + "/config.json");
      EXPECT_EQ(saved["architectures"], json::array({arch_name(f, t)}));
      EXPECT_EQ(saved["a_field_strata_does_not_read"], j["a_field_strata_does_not_read"]);
      if (t == Task::SequenceClassification) {
        EXPECT_EQ(saved["problem_type"], "multi_label_classification");
        EXPECT_EQ(saved["id2label"], j["id2label"]);
        EXPECT_EQ(saved["label2id"], j["label2id"]);
        EXPECT_EQ(loaded->config().num_labels, 3);
        EXPECT_EQ(loaded->config().problem_type, ProblemType::MultiLabel);
      }

      // Tied weights are stored once, under the table's name; nothing else is in the file.
      const io::SafetensorsFile file(dir + "/model.safetensors");
      EXPECT_EQ(file.tensors().size(), m.table().entries().size());
      EXPECT_EQ(file.metadata().at("format"), "pt");
      for (const auto& [alias, target] : m.tied_aliases()) EXPECT_EQ(file.find(alias), nullptr) << alias;
    }
  }
}

// The head of each family's ForSequenceClassification model that a base checkpoint lacks, and
// what of the base checkpoint that model does not use (RoBERTa's classifier has no pooler).
struct HeadNames {
  Family family;
  std::vector<std::string> head, unused_base;
};
const HeadNames kHeadNames[] = {
    {Family::Bert, {"classifier.bias", "classifier.weight"}, {}},
    {Family::Roberta,
     {"classifier.dense.bias", "classifier.dense.weight", "classifier.out_proj.bias", "classifier.out_proj.weight"},
     {"pooler.dense.bias", "pooler.dense.weight"}},
    {Family::DistilBert, {"classifier.bias", "classifier.weight", "pre_classifier.bias", "pre_classifier.weight"}, {}},
};

TEST(ModelsPretrained, BaseCheckpointIntoTaskModelInitialisesOnlyTheHead) {
  const ScratchDir scratch;
  const Task cls = Task::SequenceClassification;
  for (const HeadNames& hn : kHeadNames) {
    SCOPED_TRACE(family_tag(hn.family));
    EncoderModel<float> base(tiny_config(hn.family, Task::Base, ProblemType::Unset, 0.1f));
    init_perturbed(base, 41);
    const std::string dir = scratch.path(std::string(family_tag(hn.family)) + "_base");
    save_pretrained(base, dir);

    LoadReport report;
    const auto task = load_pretrained<float>(dir, &report, &cls);
    EXPECT_EQ(sorted(report.missing), hn.head);
    EXPECT_EQ(sorted(report.unexpected), hn.unused_base);

    // Encoder (and BERT's pooler) parameters come from the checkpoint under the "bert." prefix.
    const std::string prefix = task->config().base_prefix();
    EncoderModel<float> fresh(task->config());  // what HF's init gives the head with the default seed
    for (const ParamEntry& e : task->table().entries()) {
      const float* got = task->params().data() + e.offset;
      if (e.name.starts_with(prefix)) {
        const ParamEntry& src = base.table().at(e.name.substr(prefix.size()));
        EXPECT_TRUE(same_bytes(got, base.params().data() + src.offset, e.numel)) << e.name;
        continue;
      }
      EXPECT_NE(std::find(hn.head.begin(), hn.head.end(), e.name), hn.head.end()) << e.name;
      if (e.name.ends_with(".bias")) {
        EXPECT_TRUE(std::all_of(got, got + e.numel, [](float v) { return v == 0.0f; })) << e.name;
      } else {
        EXPECT_EQ(std::count(got, got + e.numel, 0.0f), 0) << e.name;
        fresh.init_parameter(e.name, 42);
        EXPECT_TRUE(same_bytes(got, fresh.params().data() + e.offset, e.numel)) << e.name;
      }
    }
  }
}

TEST(ModelsPretrained, TaskCheckpointIntoBaseModelReportsTheHeadUnused) {
  const ScratchDir scratch;
  const Task base_task = Task::Base;
  for (const HeadNames& hn : kHeadNames) {
    SCOPED_TRACE(family_tag(hn.family));
    EncoderModel<float> task(tiny_config(hn.family, Task::SequenceClassification, ProblemType::SingleLabel, 0.1f));
    init_perturbed(task, 51);
    const std::string dir = scratch.path(std::string(family_tag(hn.family)) + "_task");
    save_pretrained(task, dir);

    LoadReport report;
    const auto base = load_pretrained<float>(dir, &report, &base_task);
    EXPECT_EQ(sorted(report.unexpected), hn.head);
    EXPECT_EQ(sorted(report.missing), hn.unused_base);  // the pooler RoBERTa's task model never had
    const std::string prefix = task.config().base_prefix();
    for (const ParamEntry& e : base->table().entries()) {
      const ParamEntry* src = task.table().find(prefix + e.name);
      if (!src) continue;  // a missing pooler, checked above
      EXPECT_TRUE(same_bytes(base->params().data() + e.offset, task.params().data() + src->offset, e.numel)) << e.name;
    }
  }
}

// ---- determinism -----------------------------------------------------------------------

// Restores the thread count a test changed, even when an assertion returns early.
class ThreadCountGuard {
 public:
  ThreadCountGuard() : saved_(kernels::num_threads()) {}
  ~ThreadCountGuard() { kernels::set_num_threads(saved_); }

 private:
  int saved_;
};

struct StepResult {
  double loss;
  std::vector<float> grads, params;
};

// One training step from a fixed init: forward with dropout, loss, backward, AdamW.
StepResult train_step(const ModelConfig& c, const Batch& b, int threads) {
  kernels::set_num_threads(threads);
  EncoderModel<float> m(c);
  m.init_weights(61);
  const nn::DropoutCtx drop{true, 62};
  EncoderState<float> acts;
  m.forward(b, drop, acts);
  StepResult r;
  r.loss = m.loss(b, acts).loss;
  m.grads().zero();
  m.backward(b, drop, acts);
  r.grads.assign(m.grads().data(), m.grads().data() + m.table().total());
  OptimizerConfig oc;
  oc.lr = 1e-3;
  oc.weight_decay = 0.01;
  oc.exclude_bias_and_norm_from_decay = true;
  Optimizer<float> opt(oc, m.table());
  opt.step(m.params().data(), m.grads().data(), oc.lr);
  r.params.assign(m.params().data(), m.params().data() + m.table().total());
  return r;
}

TEST(ModelsDeterminism, TrainingStepIsBitIdenticalForAnyThreadCount) {
  const ThreadCountGuard guard;
  for (const auto& [f, t, p] : {std::tuple{Family::Bert, Task::MaskedLM, ProblemType::Unset},
                                std::tuple{Family::Roberta, Task::SequenceClassification, ProblemType::MultiLabel}}) {
    SCOPED_TRACE(arch_name(f, t));
    const ModelConfig c = tiny_config(f, t, p, 0.1f, kMedium);
    const Batch b = make_batch(c, 4, 32, 63);
    const StepResult one = train_step(c, b, 1);
    ASSERT_TRUE(std::isfinite(one.loss));
    for (int threads : {2, 3}) {
      SCOPED_TRACE(threads);
      const StepResult many = train_step(c, b, threads);
      EXPECT_EQ(std::memcmp(&one.loss, &many.loss, sizeof(double)), 0) << one.loss << " vs " << many.loss;
      EXPECT_TRUE(same_bytes(one.grads.data(), many.grads.data(), one.grads.size()));
      EXPECT_TRUE(same_bytes(one.params.data(), many.params.data(), one.params.size()));
    }
  }
}

// The device seam's promise (kernels/device.h): a step sizes its buffers in the first step and
// reuses them after, so later steps allocate nothing on the device (on a GPU: nothing reaches
// cudaMalloc, whose implicit synchronisation would stall the step).
TEST(ModelsDeviceMemory, StepsAfterTheFirstAllocateNothing) {
  // Also with the product inputs kept in bf16 (nn/block_activations.h), whose full-width set
  // moves between blocks, and after an evaluation pass that wrote into halved records.
  for (const kernels::MatmulPrecision products : {kernels::MatmulPrecision::Fp32, kernels::MatmulPrecision::Bf16})
    for (const auto& [f, t, p] : {std::tuple{Family::Bert, Task::MaskedLM, ProblemType::Unset},
                                  std::tuple{Family::Roberta, Task::SequenceClassification, ProblemType::MultiLabel},
                                  std::tuple{Family::DistilBert, Task::SequenceClassification, ProblemType::Regression}}) {
      SCOPED_TRACE(arch_name(f, t) + " " + kernels::precision_name(products));
      const MatmulPrecisionScope scope(products, kernels::MatmulPath::Emulated);
      const ModelConfig c = tiny_config(f, t, p, 0.1f);
      const Batch b = make_batch(c, 3, 12, 64);
      EncoderModel<float> m(c);
      m.init_weights(65);
      nn::ActivationPolicy policy;
      policy.products = products;
      EncoderState<float> acts(policy);
      OptimizerConfig oc;
      oc.lr = 1e-3;
      Optimizer<float> opt(oc, m.table());
      auto step = [&](uint64_t seed) {
        const nn::DropoutCtx drop{true, seed};
        m.forward(b, drop, acts);
        m.loss(b, acts);
        m.grads().zero();
        m.backward(b, drop, acts);
        opt.step(m.params().data(), m.grads().data(), oc.lr);
      };
      step(1);
      m.infer(b, acts);
      step(2);
      const uint64_t after_second = kernels::memory_stats(kernels::current_device()).allocations;
      step(3);
      step(4);
      EXPECT_EQ(kernels::memory_stats(kernels::current_device()).allocations, after_second);
    }
}

// ---- the CLI on the Hugging Face fixtures ----------------------------------------------

// `strata step` must write exactly loss, logits and one gradient per parameter, in the
// requested precision; its fp64 loss must agree with PyTorch's fp64 loss for the same batch.
TEST(ModelsCli, StepWritesLossLogitsAndEveryGradient) {
  const ScratchDir scratch;
  for (const std::string name : {"bert-seq-cls", "roberta-masked-lm", "distilbert-seq-cls-multilabel"}) {
    const std::string dir = test::fixture(name), batch_path = test::fixture(name + ".inputs.json");
    const ModelConfig cfg = load_model_config(dir);
    const Batch batch = read_batch_json(batch_path, cfg);
    const EncoderModel<float> shape_only(cfg);
    const io::SafetensorsFile ref(test::fixture(name + ".ref.safetensors"));
    double ref_loss;
    io::convert_to(*ref.find("f64/loss"), &ref_loss);

    for (const auto& [precision, dtype, tol] : {std::tuple{"fp64", DType::F64, 1e-9}, std::tuple{"fp32", DType::F32, 1e-5}}) {
      SCOPED_TRACE(name + " " + precision);
      const std::string out = scratch.path(name + "." + precision + ".safetensors");
      const auto r = test::run_strata(
          {"step", "--model", dir, "--batch", batch_path, "--out", out, "--precision", precision}, scratch);
      ASSERT_EQ(r.exit_code, 0) << r.err;

      const io::SafetensorsFile file(out);
      EXPECT_EQ(file.tensors().size(), 2 + shape_only.table().entries().size());
      const io::TensorView* loss = file.find("loss");
      ASSERT_NE(loss, nullptr);
      EXPECT_EQ(loss->dtype, dtype);
      EXPECT_TRUE(loss->shape.empty());
      double loss_value;
      io::convert_to(*loss, &loss_value);
      EXPECT_NEAR(loss_value, ref_loss, tol * std::abs(ref_loss));

      const io::TensorView* logits = file.find("logits");
      ASSERT_NE(logits, nullptr);
      EXPECT_EQ(logits->dtype, dtype);
      const std::vector<int64_t> logits_shape =
          cfg.task == Task::MaskedLM ? std::vector<int64_t>{batch.B, batch.T, cfg.vocab_size}
                                     : std::vector<int64_t>{batch.B, cfg.num_labels};
      EXPECT_EQ(logits->shape, logits_shape);

      for (const ParamEntry& e : shape_only.table().entries()) {
        const io::TensorView* g = file.find("grad." + e.name);
        ASSERT_NE(g, nullptr) << "grad." << e.name;
        EXPECT_EQ(g->dtype, dtype) << e.name;
        EXPECT_EQ(g->shape, e.shape) << e.name;
        std::vector<double> values(e.numel);
        io::convert_to(*g, values.data());
        EXPECT_TRUE(std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); })) << e.name;
      }
    }
  }
}

// `strata info` reports the architecture of config.json and the parameter count of the table,
// which must also be what PyTorch counted for the fixture (tied weights once).
TEST(ModelsCli, InfoPrintsArchitectureAndParameterCount) {
  const ScratchDir scratch;
  for (const std::string name : {"bert-seq-cls", "bert-masked-lm", "roberta-seq-cls-regression", "roberta-masked-lm",
                                 "distilbert-seq-cls-multilabel", "distilbert-masked-lm"}) {
    SCOPED_TRACE(name);
    const std::string dir = test::fixture(name);
    const auto r = test::run_strata({"info", dir}, scratch);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json config = io::read_json_file(dir + "/config.json");
    EXPECT_NE(r.out.find("architecture   " + config["architectures"][0].get<std::string>()), std::string::npos)
        << r.out;
    std::smatch match;
    ASSERT_TRUE(std::regex_search(r.out, match, std::regex(R"(\nparameters +(\d+) )"))) << r.out;
    const size_t printed = std::stoull(match[1]);
    EXPECT_EQ(printed, EncoderModel<float>(load_model_config(dir)).table().total());
    EXPECT_EQ(printed, io::read_json_file(dir + "/harness_info.json")["num_parameters"].get<size_t>());
  }
}

}  // namespace
}  // namespace strata
