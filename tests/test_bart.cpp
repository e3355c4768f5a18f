// BART model tests: whole-model gradients against central differences (fp64, dropout on) for
// both heads, HF's decoder inputs (shift_tokens_right), the tied and untrained parameters, and
// refused batches and configs. HF parity (loss, logits, every gradient, one AdamW step) is in
// test_hf_parity.cpp, on tests/fixtures/bart-*.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grad_check.h"
#include "io/safetensors.h"
#include "kernels/ops.h"
#include "models/bart/bart_decoder.h"
#include "models/bart/bart_model.h"
#include "models/causal_decoder.h"
#include "models/batch_checks.h"
#include "models/config.h"
#include "models/pretrained.h"
#include "models/registry.h"
#include "test_util_fs.h"
#include "test_util_model.h"
#include "util/error.h"

namespace strata {
namespace {

using nlohmann::json;
using test::init_perturbed;
using test::uniform_int;

constexpr int kPad = 1, kEos = 2, kStart = 2;

// A BartConfig as HF writes it, tiny; encoder and decoder differ in heads and FFN width, and
// scale_embedding is on (sqrt(8) is not a power of two, so a missing or misplaced scale shows).
json tiny_bart_json(Task task, float dropout) {
  json j;
  j["model_type"] = "bart";
  j["architectures"] = {task == Task::Seq2SeqLM ? "BartForConditionalGeneration"
                        : task == Task::SequenceClassification ? "BartForSequenceClassification"
                                                               : "BartModel"};
  j["vocab_size"] = 23;
  j["max_position_embeddings"] = 16;
  j["d_model"] = 8;
  j["encoder_layers"] = 2;
  j["decoder_layers"] = 2;
  j["encoder_attention_heads"] = 2;
  j["decoder_attention_heads"] = 1;
  j["encoder_ffn_dim"] = 12;
  j["decoder_ffn_dim"] = 10;
  j["activation_function"] = "gelu";
  j["dropout"] = dropout;
  j["attention_dropout"] = dropout;
  j["activation_dropout"] = dropout;
  j["classifier_dropout"] = dropout;
  j["init_std"] = 0.2;  // far from linear, as in test_models.cpp
  j["scale_embedding"] = true;
  j["pad_token_id"] = kPad;
  j["bos_token_id"] = 0;
  j["eos_token_id"] = kEos;
  j["decoder_start_token_id"] = kStart;
  if (task == Task::SequenceClassification) j["num_labels"] = 3;
  return j;
}

ModelConfig tiny_bart(Task task, float dropout) {
  return parse_model_config(tiny_bart_json(task, dropout), "tiny bart config.json");
}

// Rows <s> tokens </s> then padding (odd rows a third shorter); real tokens avoid bos, pad and
// eos, so each row has one eos. Conditional generation: with Td == 0 (denoising) the clean row
// as labels, -100 on padding, the input corrupted at a few positions; else targets of their own,
// Td long (odd rows shorter, -100 after their </s>).
Batch make_batch(const ModelConfig& c, int B, int T, uint64_t seed, int Td = 0) {
  std::mt19937_64 rng(seed);
  Batch b;
  b.B = B;
  b.T = T;
  if (c.task == Task::Seq2SeqLM) b.Td = Td > 0 ? Td : T;
  for (int r = 0; r < B; ++r) {
    const int len = r % 2 ? T - T / 3 : T;
    for (int t = 0; t < T; ++t) {
      const int id = t >= len ? kPad : t == 0 ? 0 : t == len - 1 ? kEos : uniform_int(rng, 3, c.vocab_size);
      const bool corrupt = c.task == Task::Seq2SeqLM && t > 0 && t < len - 1 && uniform_int(rng, 0, 4) == 0;
      b.input_ids.push_back(corrupt ? uniform_int(rng, 3, c.vocab_size) : id);
      b.attention_mask.push_back(t < len);
      b.token_type_ids.push_back(0);
      if (c.task == Task::Seq2SeqLM && Td == 0) b.labels.push_back(t < len ? id : -100);
    }
    const int target_len = r % 2 ? Td - Td / 3 : Td;
    for (int t = 0; t < Td && c.task == Task::Seq2SeqLM; ++t)
      b.labels.push_back(t >= target_len ? -100 : t == 0 ? 0 : t == target_len - 1 ? kEos
                                                                           : uniform_int(rng, 3, c.vocab_size));
  }
  if (c.task == Task::SequenceClassification)
    for (int r = 0; r < B; ++r) b.labels.push_back(uniform_int(rng, 0, c.num_labels));
  check_batch(c, b, "generated batch");
  return b;
}

// The key projection's bias shifts every score of a query equally: softmax ignores it, so its
// gradient is exactly zero. final_logits_bias is HF's buffer, never trained: zero by design,
// although the logits depend on it.
test::ZeroGradients bart_zero_gradients() {
  test::ZeroGradients z;
  z.tensor = [](const std::string& n) { return n.ends_with("k_proj.bias") || n == "final_logits_bias"; };
  z.element = [](const ParamEntry& e, size_t) { return e.name == "final_logits_bias"; };
  return z;
}

class BartGradCheck : public testing::TestWithParam<Task> {};

TEST_P(BartGradCheck, EveryParameterMatchesCentralDifferencesWithDropout) {
  BartModel<double> m(tiny_bart(GetParam(), 0.1f));
  init_perturbed(m, 7);
  const Batch b = make_batch(m.config(), 3, 7, 11);
  test::expect_gradients_match_finite_differences_with_dropout(m, b, bart_zero_gradients());
}

// Targets of another length than the inputs (summarization's shorter, translation's longer).
TEST(BartGradCheck, TargetsOfTheirOwnLengthMatchCentralDifferencesWithDropout) {
  BartModel<double> m(tiny_bart(Task::Seq2SeqLM, 0.1f));
  init_perturbed(m, 7);
  for (int Td : {4, 9}) {
    SCOPED_TRACE(Td);
    const Batch b = make_batch(m.config(), 3, 7, 11, Td);
    test::expect_gradients_match_finite_differences_with_dropout(m, b, bart_zero_gradients());
  }
}

// decoder_input_ids given explicitly (as generation feeds them) are read instead of the labels
// shifted right: the shifted labels given as decoder_input_ids give the same logits.
TEST(BartModel, ExplicitDecoderInputIdsReplaceTheShiftedLabels) {
  BartModel<double> m(tiny_bart(Task::Seq2SeqLM, 0));
  init_perturbed(m, 3);
  const Batch b = make_batch(m.config(), 2, 6, 5, 4);
  Batch explicit_inputs = b;
  explicit_inputs.labels.clear();
  for (int r = 0; r < b.B; ++r)
    for (int t = 0; t < b.Td; ++t) {
      const int32_t v = t == 0 ? kStart : b.labels[static_cast<size_t>(r) * b.Td + t - 1];
      explicit_inputs.decoder_input_ids.push_back(v == -100 ? kPad : v);
    }
  const nn::DropoutCtx off{false, 0};
  auto logits = [&](const Batch& x) {
    auto st = m.new_state();
    const double* l = m.forward(x, off, *st);
    return std::vector<double>(l, l + static_cast<size_t>(x.B) * x.Td * m.config().vocab_size);
  };
  EXPECT_EQ(logits(b), logits(explicit_inputs));
}

INSTANTIATE_TEST_SUITE_P(Bart, BartGradCheck, testing::Values(Task::Seq2SeqLM, Task::SequenceClassification),
                         [](const testing::TestParamInfo<Task>& i) {
                           return i.param == Task::Seq2SeqLM ? std::string("ConditionalGeneration")
                                                            : std::string("SequenceClassification");
                         });

// HF's shift_tokens_right: position 0 reads decoder_start_token_id, position t the label at
// t-1, with -100 read as pad_token_id. Seen through the decoder's causality: changing the label
// at t changes no logit at positions <= t, and a label of -100 acts as the pad token.
TEST(BartModel, DecoderReadsTheLabelsShiftedRightWithMinus100AsPad) {
  BartModel<double> m(tiny_bart(Task::Seq2SeqLM, 0));
  init_perturbed(m, 3);
  Batch b = make_batch(m.config(), 2, 6, 5);
  const nn::DropoutCtx off{false, 0};
  auto logits = [&](const Batch& x) {
    auto st = m.new_state();
    const double* l = m.forward(x, off, *st);
    return std::vector<double>(l, l + static_cast<size_t>(x.B) * x.T * m.config().vocab_size);
  };
  const auto base = logits(b);
  const int V = m.config().vocab_size;
  Batch changed = b;
  changed.labels[3] = changed.labels[3] == 5 ? 6 : 5;  // row 0, position 3
  const auto after = logits(changed);
  for (int t = 0; t < b.T; ++t) {
    const bool same = std::equal(base.begin() + t * V, base.begin() + (t + 1) * V, after.begin() + t * V);
    EXPECT_EQ(same, t <= 3) << "position " << t;
  }
  Batch ignored = b, padded = b;
  ignored.labels[2] = -100;
  padded.labels[2] = kPad;
  EXPECT_EQ(logits(ignored), logits(padded));
}

// The cached decoder (encoder once, cross-attention keys once, self-attention keys per row) gives
// the recompute decoder's logits (the whole model at every step) through steps of one and of
// several tokens and a beam-search reorder.
TEST(BartModel, CachedDecoderMatchesRecomputingTheWholeModel) {
  BartModel<double> m(tiny_bart(Task::Seq2SeqLM, 0.1f));  // dropout is off in decoding
  init_perturbed(m, 3);
  const Batch src = make_batch(m.config(), 1, 7, 5);
  const auto cached = make_seq2seq_decoder(m, src.input_ids, true);
  const auto recompute = make_seq2seq_decoder(m, src.input_ids, false);
  ASSERT_NE(dynamic_cast<BartDecoder<double>*>(cached.get()), nullptr);
  const int V = m.config().vocab_size;
  auto same = [&](const double* a, const double* b, int B) {
    for (int i = 0; i < B * V; ++i) ASSERT_NEAR(a[i], b[i], 1e-12 * (1 + std::abs(b[i]))) << i;
  };
  for (auto* d : {cached.get(), recompute.get()}) d->reset(3, 10);
  const std::vector<std::vector<int32_t>> steps = {{kStart, kStart, kStart}, {5, 6, 7, 8, 9, 10}, {11, 12, 13}};
  for (size_t s = 0; s < steps.size(); ++s) {
    SCOPED_TRACE(s);
    const int n = static_cast<int>(steps[s].size()) / 3;
    if (s == 2) {
      for (auto* d : {cached.get(), recompute.get()}) d->reorder({2, 0, 0});
    }
    const double* a = cached->append(steps[s].data(), n);
    const double* b = recompute->append(steps[s].data(), n);
    same(a, b, 3);
  }
  EXPECT_EQ(cached->length(), 4);
}

TEST(BartModel, SharedEmbeddingIsTiedAndFinalLogitsBiasIsNeverTrained) {
  BartModel<double> m(tiny_bart(Task::Seq2SeqLM, 0));
  init_perturbed(m, 3);
  const auto& aliases = m.tied_aliases();
  for (const char* n : {"lm_head.weight", "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"})
    EXPECT_NE(std::find(aliases.begin(), aliases.end(), std::make_pair(std::string(n), std::string("model.shared.weight"))),
              aliases.end())
        << n;
  const ParamEntry& flb = m.table().at("final_logits_bias");
  EXPECT_TRUE(flb.no_decay);
  const Batch b = make_batch(m.config(), 2, 6, 5);
  auto st = m.new_state();
  test::compute_gradients(m, b, nn::DropoutCtx{false, 0}, *st);
  for (size_t i = 0; i < flb.numel; ++i) EXPECT_EQ(m.grads()[flb.offset + i], 0.0);
}

// HF's checkpoint (tests/fixtures, saved by BartForConditionalGeneration.save_pretrained) holds
// model.shared.weight and final_logits_bias and none of the tied names; it loads with nothing
// missing or unused, and strata's own save loads back bit for bit, with the tied names left out.
TEST(BartModel, LoadsHfCheckpointAndSaveLoadRoundTripIsBitExact) {
  for (const char* name : {"bart-cond-gen", "bart-seq-cls"}) {
    SCOPED_TRACE(name);
    LoadReport hf;
    const auto m = load_pretrained<float>(test::fixture(name), &hf);
    EXPECT_TRUE(hf.missing.empty() && hf.unexpected.empty());
    const test::ScratchDir scratch;
    save_pretrained(*m, scratch.path("saved"));
    LoadReport report;
    const auto back = load_pretrained<float>(scratch.path("saved"), &report);
    EXPECT_TRUE(report.missing.empty() && report.unexpected.empty());
    EXPECT_EQ(std::memcmp(back->params().data(), m->params().data(), m->table().total() * sizeof(float)), 0);
    const io::SafetensorsFile file(scratch.path("saved") + "/model.safetensors");
    EXPECT_EQ(file.tensors().size(), m->table().entries().size());
    for (const auto& [alias, target] : m->tied_aliases()) EXPECT_EQ(file.find(alias), nullptr) << alias;
  }
}

// A training step with dropout gives the same bits on 1, 2 and 3 threads (the products in the
// kernels' default fixed tiles, the attention loops serial), as docs/numerics.md promises. The
// model is wide enough (d_model 64, 4 x 32 tokens, vocab 500) for products of several tiles.
TEST(BartModel, TrainingStepIsBitIdenticalForAnyThreadCount) {
  const int saved_threads = kernels::num_threads();
  json j = tiny_bart_json(Task::Seq2SeqLM, 0.1f);
  j["d_model"] = 64;
  j["encoder_ffn_dim"] = 256;
  j["decoder_ffn_dim"] = 192;
  j["vocab_size"] = 500;
  j["max_position_embeddings"] = 64;
  const ModelConfig c = parse_model_config(j, "medium bart config.json");
  auto step = [&](int threads) {
    kernels::set_num_threads(threads);
    BartModel<float> m(c);
    m.init_weights(61);
    const Batch b = make_batch(m.config(), 4, 32, 63);
    const nn::DropoutCtx drop{true, 62};
    auto st = m.new_state();
    m.forward(b, drop, *st);
    const double loss = m.loss(b, *st).loss;
    m.grads().zero();
    m.backward(b, drop, *st);
    std::vector<float> g(m.grads().data(), m.grads().data() + m.table().total());
    return std::pair{loss, g};
  };
  const auto one = step(1);
  for (int threads : {2, 3}) {
    const auto many = step(threads);
    EXPECT_EQ(std::memcmp(&one.first, &many.first, sizeof(double)), 0) << threads;
    EXPECT_EQ(std::memcmp(one.second.data(), many.second.data(), one.second.size() * sizeof(float)), 0) << threads;
  }
  kernels::set_num_threads(saved_threads);
}

TEST(BartBadInput, SequenceClassificationNeedsTheSameNumberOfEosPerRow) {
  BartModel<double> m(tiny_bart(Task::SequenceClassification, 0));
  Batch b = make_batch(m.config(), 2, 6, 5);
  auto st = m.new_state();
  b.input_ids[2] = kEos;  // row 0 now has two
  EXPECT_THROW(m.forward(b, nn::DropoutCtx{false, 0}, *st), Error);
  b.input_ids[2] = 5;
  b.input_ids[5] = 5;  // row 0 now has none
  EXPECT_THROW(m.forward(b, nn::DropoutCtx{false, 0}, *st), Error);
}

TEST(BartBadInput, LayerDropIsRefusedNamingTheFile) {
  json j = tiny_bart_json(Task::Seq2SeqLM, 0);
  j["encoder_layerdrop"] = 0.1;
  try {
    parse_model_config(j, "bart/config.json");
    FAIL() << "encoder_layerdrop was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bart/config.json"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace strata
