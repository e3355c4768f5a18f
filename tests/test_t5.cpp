// T5 model tests: whole-model gradients against central differences (fp64, dropout on) for the
// original T5 (relu, tied and scaled head) and v1.1 (gated-gelu, untied head) with targets of
// their own length; the relative position buckets against a hand-computed table and HF's own
// function; HF's decoder inputs (_shift_right); the cached decoder against recomputation; the
// tied / untied head; HF's init; save / load; thread-count bit identity; the memory estimate;
// refused configs, checkpoints and settings. HF parity (loss, logits, every gradient, one AdamW
// step) is in test_hf_parity.cpp, on tests/fixtures/t5-*, generate()'s in test_t5_generate.cpp;
// HF reading what strata saves in tests/hf_oracle/hf_reads_t5.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grad_check.h"
#include "io/files.h"
#include "io/safetensors.h"
#include "kernels/ops.h"
#include "models/batch_checks.h"
#include "models/causal_decoder.h"
#include "models/config.h"
#include "models/pretrained.h"
#include "models/registry.h"
#include "models/t5/relative_position.h"
#include "models/t5/t5_decoder.h"
#include "models/t5/t5_model.h"
#include "test_util_fs.h"
#include "test_util_model.h"
#include "util/error.h"

namespace strata {
namespace {

using nlohmann::json;
using test::init_perturbed;
using test::uniform_int;

constexpr int kPad = 0, kEos = 1;

enum class Variant { Original, V1_1 };  // relu + tied and scaled head; gated-gelu + lm_head of its own

// A T5Config as HF writes it, tiny: the heads' width 2 x 3 differs from d_model 8, the decoder
// is deeper than the encoder, and 8 buckets reaching distance 6 make short rows use the exact,
// logarithmic and saturated buckets of both directions.
json tiny_t5_json(Variant v, float dropout) {
  json j;
  j["model_type"] = "t5";
  j["architectures"] = {"T5ForConditionalGeneration"};
  j["vocab_size"] = 23;
  j["d_model"] = 8;
  j["d_kv"] = 3;
  j["d_ff"] = 10;
  j["num_heads"] = 2;
  j["num_layers"] = 2;
  j["num_decoder_layers"] = 3;
  j["relative_attention_num_buckets"] = 8;
  j["relative_attention_max_distance"] = 6;
  j["dropout_rate"] = dropout;
  j["layer_norm_epsilon"] = 1e-6;
  j["initializer_factor"] = 0.5;  // weights of HF's init scaled down, far from linear still
  j["feed_forward_proj"] = v == Variant::Original ? "relu" : "gated-gelu";
  j["tie_word_embeddings"] = v == Variant::Original;
  j["pad_token_id"] = kPad;
  j["eos_token_id"] = kEos;
  j["decoder_start_token_id"] = kPad;
  return j;
}

ModelConfig tiny_t5(Variant v, float dropout) { return parse_model_config(tiny_t5_json(v, dropout), "tiny t5 config.json"); }

// Rows of tokens then </s>, then padding (odd rows a third shorter); targets Td long ending in
// </s> (odd rows shorter, -100 after), and -100 inside row 0 when Td > 3.
Batch make_batch(const ModelConfig& c, int B, int T, int Td, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Batch b;
  b.B = B;
  b.T = T;
  b.Td = Td;
  for (int r = 0; r < B; ++r) {
    const int len = r % 2 ? T - T / 3 : T;
    for (int t = 0; t < T; ++t) {
      b.input_ids.push_back(t >= len ? kPad : t == len - 1 ? kEos : uniform_int(rng, 2, c.vocab_size));
      b.attention_mask.push_back(t < len);
      b.token_type_ids.push_back(0);
    }
    const int target_len = r % 2 ? Td - Td / 3 : Td;
    for (int t = 0; t < Td; ++t)
      b.labels.push_back(t >= target_len ? -100 : t == target_len - 1 ? kEos : uniform_int(rng, 2, c.vocab_size));
  }
  if (Td > 3) b.labels[2] = -100;
  check_batch(c, b, "generated batch");
  return b;
}

std::vector<double> logits_of(const T5Model<double>& m, const Batch& b) {
  auto st = m.new_state();
  const double* l = m.forward(b, nn::DropoutCtx{false, 0}, *st);
  return std::vector<double>(l, l + static_cast<size_t>(b.B) * b.Td * m.config().vocab_size);
}

std::string variant_name(const testing::TestParamInfo<Variant>& i) {
  return i.param == Variant::Original ? "ReluTied" : "GatedGeluUntied";
}

class T5GradCheck : public testing::TestWithParam<Variant> {};

// Targets shorter than the inputs for the original T5 (summarization's), longer for v1.1
// (translation's): 7 input tokens, 5 or 9 targets.
TEST_P(T5GradCheck, EveryParameterMatchesCentralDifferencesWithDropout) {
  T5Model<double> m(tiny_t5(GetParam(), 0.1f));
  init_perturbed(m, 7);
  const Batch b = make_batch(m.config(), 3, 7, GetParam() == Variant::Original ? 5 : 9, 11);
  test::expect_gradients_match_finite_differences_with_dropout(m, b);
}

INSTANTIATE_TEST_SUITE_P(T5, T5GradCheck, testing::Values(Variant::Original, Variant::V1_1), variant_name);

// T5's heads have their own width d_kv: 3 heads of 4 over d_model 10 is a valid T5 (the generic
// "hidden size divisible by the number of heads" rule is not T5's), and it trains correctly.
TEST(T5Model, HeadsNeedNotDivideDModel) {
  json j = tiny_t5_json(Variant::V1_1, 0.1f);
  j["d_model"] = 10;
  j["num_heads"] = 3;
  j["d_kv"] = 4;
  T5Model<double> m(parse_model_config(j, "t5 config.json"));
  EXPECT_EQ(m.config().head_size(), 4);
  init_perturbed(m, 5);
  test::expect_gradients_match_finite_differences_with_dropout(m, make_batch(m.config(), 2, 6, 4, 9));
}

// HF's _relative_position_bucket worked by hand for T5's defaults (32 buckets, distance 128):
// bidirectional, 8 exact distances per direction, then 8 logarithmic buckets up to 128
// (8 + floor(8 log(n/8) / log 16)), keys after the query in buckets 16..31; unidirectional,
// 16 exact, then 16 + floor(16 log(n/16) / log 8), keys after the query in bucket 0.
TEST(T5RelativePosition, BucketsMatchAHandComputedTable) {
  const std::vector<std::pair<int, int>> bidirectional = {
      {0, 0},    {-1, 1},   {1, 17},   {-7, 7},    {-8, 8},    {-15, 9},    {-16, 10},
      {-32, 12}, {-64, 14}, {-127, 15}, {-128, 15}, {-1000, 15}, {20, 26},    {7, 23}};
  for (const auto& [rp, bucket] : bidirectional)
    EXPECT_EQ(relative_position_bucket(rp, true, 32, 128), bucket) << "bidirectional " << rp;
  const std::vector<std::pair<int, int>> causal = {{5, 0},    {0, 0},     {-3, 3},     {-15, 15},  {-16, 16},
                                                   {-20, 17}, {-100, 30}, {-127, 31}, {-128, 31}, {-500, 31}};
  for (const auto& [rp, bucket] : causal) EXPECT_EQ(relative_position_bucket(rp, false, 32, 128), bucket) << rp;
  // the table's layout: query i, key j at i * Tk + j, the bucket of j - i
  const std::vector<int32_t> table = relative_position_buckets(2, 3, true, 32, 128);
  EXPECT_EQ(table, (std::vector<int32_t>{0, 17, 18, 1, 0, 17}));
}

// HF's own function (tests/fixtures/t5_relative_buckets.json, written by make_fixtures_t5.sh) for
// relative positions -300..300 and several (num_buckets, max_distance), both directions.
TEST(T5RelativePosition, BucketsMatchHfOverAWideRange) {
  const json ref = io::read_json_file(test::fixture("t5_relative_buckets.json"));
  const int first = ref["relative_positions"][0].get<int>();
  for (const json& c : ref["cases"]) {
    const int nb = c["num_buckets"].get<int>(), md = c["max_distance"].get<int>();
    const bool bi = c["bidirectional"].get<bool>();
    const std::vector<int> want = c["buckets"].get<std::vector<int>>();
    int differ = 0;
    for (size_t i = 0; i < want.size(); ++i) differ += relative_position_bucket(first + static_cast<int>(i), bi, nb, md) != want[i];
    EXPECT_EQ(differ, 0) << "num_buckets " << nb << " max_distance " << md << (bi ? " bidirectional" : " causal");
  }
}

// HF's _shift_right: decoder position 0 reads decoder_start_token_id (pad), position t the label
// at t-1, -100 read as pad_token_id. Given explicitly (as generation feeds them) the same ids give
// the same logits; through the decoder's causality, changing the label at t changes no logit at
// positions <= t.
TEST(T5Model, DecoderReadsTheLabelsShiftedRightWithMinus100AsPad) {
  T5Model<double> m(tiny_t5(Variant::V1_1, 0));
  init_perturbed(m, 3);
  const Batch b = make_batch(m.config(), 2, 6, 5, 5);
  Batch explicit_inputs = b;
  explicit_inputs.labels.clear();
  for (int r = 0; r < b.B; ++r)
    for (int t = 0; t < b.Td; ++t) {
      const int32_t v = t == 0 ? kPad : b.labels[static_cast<size_t>(r) * b.Td + t - 1];
      explicit_inputs.decoder_input_ids.push_back(v == -100 ? kPad : v);
    }
  const auto base = logits_of(m, b);
  EXPECT_EQ(base, logits_of(m, explicit_inputs));
  const int V = m.config().vocab_size;
  Batch changed = b;
  changed.labels[3] = changed.labels[3] == 5 ? 6 : 5;  // row 0, position 3
  const auto after = logits_of(m, changed);
  for (int t = 0; t < b.Td; ++t) {
    const bool same = std::equal(base.begin() + t * V, base.begin() + (t + 1) * V, after.begin() + t * V);
    EXPECT_EQ(same, t <= 3) << "position " << t;
  }
  Batch ignored = b, padded = b;
  ignored.labels[1] = -100;
  padded.labels[1] = kPad;
  EXPECT_EQ(logits_of(m, ignored), logits_of(m, padded));
}

class T5CachedDecoder : public testing::TestWithParam<Variant> {};

// The cached decoder (encoder once, cross-attention keys once, self-attention keys per row and
// the new rows' position bias per step) gives the recompute decoder's logits (the whole model at
// every step) through steps of one and two tokens and beam-search reorders, over 12 positions:
// past distance 4, where the causal buckets turn logarithmic, and 6, where they saturate.
TEST_P(T5CachedDecoder, MatchesRecomputingTheWholeModel) {
  T5Model<double> m(tiny_t5(GetParam(), 0.1f));  // dropout is off in decoding
  init_perturbed(m, 3);
  const Batch src = make_batch(m.config(), 1, 7, 3, 5);
  const auto cached = make_seq2seq_decoder(m, src.input_ids, true);
  const auto recompute = make_seq2seq_decoder(m, src.input_ids, false);
  ASSERT_NE(dynamic_cast<T5Decoder<double>*>(cached.get()), nullptr);
  const int B = 3, V = m.config().vocab_size;
  for (auto* d : {cached.get(), recompute.get()}) d->reset(B, 12);
  std::mt19937_64 rng(17);
  double worst = 0;  // largest |cached - recompute| / (1 + |recompute|)
  const int steps[] = {1, 2, 1, 2, 1, 1, 1, 2, 1};
  for (int s = 0; s < 9; ++s) {
    SCOPED_TRACE(s);
    const int n = steps[s];
    if (s == 2 || s == 6) {
      const std::vector<int32_t> rows = s == 2 ? std::vector<int32_t>{2, 0, 0} : std::vector<int32_t>{1, 2, 1};
      for (auto* d : {cached.get(), recompute.get()}) d->reorder(rows);
    }
    std::vector<int32_t> ids(static_cast<size_t>(B) * n);
    for (int32_t& id : ids) id = s == 0 ? kPad : uniform_int(rng, 2, V);  // decoder_start_token_id first
    const double* a = cached->append(ids.data(), n);
    const double* b = recompute->append(ids.data(), n);
    for (int i = 0; i < B * V; ++i) {
      const double err = std::abs(a[i] - b[i]) / (1 + std::abs(b[i]));
      worst = std::max(worst, err);
      ASSERT_LE(err, 1e-12) << "logit " << i << ": " << a[i] << " vs " << b[i];
    }
  }
  EXPECT_EQ(cached->length(), 12);
  std::printf("T5 cached decoder vs recompute (fp64): largest relative difference %.2g\n", worst);
}

INSTANTIATE_TEST_SUITE_P(T5, T5CachedDecoder, testing::Values(Variant::Original, Variant::V1_1), variant_name);

// The original T5's head is the shared table, read by the decoder's output times d_model^-0.5;
// v1.1's is lm_head.weight, unscaled. With lm_head set to the shared table the two give logits
// in the ratio 8^-0.5.
TEST(T5Model, TiedHeadScalesTheDecoderOutputAndTheUntiedOneHasItsOwnWeight) {
  json tied_json = tiny_t5_json(Variant::Original, 0), untied_json = tied_json;
  untied_json["tie_word_embeddings"] = false;
  T5Model<double> tied(parse_model_config(tied_json, "tied config.json"));
  T5Model<double> untied(parse_model_config(untied_json, "untied config.json"));
  EXPECT_TRUE(tied.tied_lm_head());
  EXPECT_FALSE(untied.tied_lm_head());
  EXPECT_FALSE(tied.table().find("lm_head.weight"));
  const ParamEntry* head = untied.table().find("lm_head.weight");
  ASSERT_TRUE(head);
  const auto& aliases = tied.tied_aliases();
  EXPECT_NE(std::find(aliases.begin(), aliases.end(), std::make_pair(std::string("lm_head.weight"), std::string("shared.weight"))),
            aliases.end());
  init_perturbed(tied, 4);
  std::copy(tied.params().data(), tied.params().data() + tied.table().total(), untied.params().data());
  const ParamEntry& shared = untied.table().at("shared.weight");
  std::copy(untied.params().data() + shared.offset, untied.params().data() + shared.offset + shared.numel,
            untied.params().data() + head->offset);
  const Batch b = make_batch(tied.config(), 2, 5, 4, 6);
  const auto a = logits_of(tied, b), u = logits_of(untied, b);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], u[i] / std::sqrt(8.0), 1e-12 * (1 + std::abs(u[i]))) << i;
  // transformers 5 writes the scaling as scale_decoder_outputs (and tie_word_embeddings true):
  // no scaling means a head of its own
  json v5 = tied_json;
  v5["scale_decoder_outputs"] = false;
  EXPECT_FALSE(T5Model<double>(parse_model_config(v5, "v5 config.json")).tied_lm_head());
}

// HF's _init_weights for T5 with initializer_factor f: norms f; shared and the untied head
// N(0, f); q N(0, f (d_model d_kv)^-1/2); k, v, wi N(0, f d_model^-1/2); o N(0, f (heads d_kv)^-1/2);
// wo N(0, f d_ff^-1/2); relative_attention_bias N(0, f d_model^-1/2).
TEST(T5Model, InitFollowsHfFactorBasedStandardDeviations) {
  json j = tiny_t5_json(Variant::V1_1, 0);
  j["d_model"] = 64;
  j["d_kv"] = 16;
  j["num_heads"] = 4;
  j["d_ff"] = 128;
  j["vocab_size"] = 300;
  j["relative_attention_num_buckets"] = 32;
  j["relative_attention_max_distance"] = 128;
  T5Model<double> m(parse_model_config(j, "init config.json"));
  m.init_weights(5);
  const double f = 0.5;
  auto stddev = [&](const std::string& name) {
    const ParamEntry& e = m.table().at(name);
    double s = 0;
    for (size_t i = 0; i < e.numel; ++i) s += m.params()[e.offset + i] * m.params()[e.offset + i];
    return std::sqrt(s / static_cast<double>(e.numel));
  };
  const std::vector<std::pair<std::string, double>> want = {
      {"shared.weight", f},
      {"lm_head.weight", f},
      {"encoder.block.0.layer.0.SelfAttention.q.weight", f / std::sqrt(64.0 * 16)},
      {"encoder.block.0.layer.0.SelfAttention.k.weight", f / 8},
      {"decoder.block.1.layer.1.EncDecAttention.v.weight", f / 8},
      {"decoder.block.2.layer.0.SelfAttention.o.weight", f / 8},
      {"encoder.block.1.layer.1.DenseReluDense.wi_0.weight", f / 8},
      {"encoder.block.1.layer.1.DenseReluDense.wi_1.weight", f / 8},
      {"decoder.block.0.layer.2.DenseReluDense.wo.weight", f / std::sqrt(128.0)},
      {"encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", f / 8}};
  for (const auto& [name, sd] : want) EXPECT_NEAR(stddev(name), sd, 0.1 * sd) << name;
  for (const char* name : {"encoder.block.0.layer.0.layer_norm.weight", "decoder.final_layer_norm.weight"}) {
    const ParamEntry& e = m.table().at(name);
    EXPECT_TRUE(e.no_decay) << name;
    for (size_t i = 0; i < e.numel; ++i) EXPECT_EQ(m.params()[e.offset + i], f) << name;
  }
  EXPECT_FALSE(m.table().find("decoder.block.1.layer.0.SelfAttention.relative_attention_bias.weight"));
}

// HF's checkpoints (tests/fixtures, saved by T5ForConditionalGeneration.save_pretrained) load with
// nothing missing or unused, and strata's own save loads back bit for bit: the tied names left
// out, an untied head saved as lm_head.weight.
TEST(T5Model, LoadsHfCheckpointAndSaveLoadRoundTripIsBitExact) {
  for (const char* name : {"t5-cond-gen", "t5-v1_1-cond-gen"}) {
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
    EXPECT_EQ(file.find("lm_head.weight") != nullptr, std::string(name) == "t5-v1_1-cond-gen");
    for (const char* tied : {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight"})
      EXPECT_EQ(file.find(tied), nullptr) << tied;
  }
}

// T5Model (the base model) reads the task model's checkpoint: the same names, no prefix.
TEST(T5Model, BaseModelLoadsTheConditionalGenerationCheckpoint) {
  const Task base = Task::Base;
  LoadReport report;
  const auto m = load_pretrained<float>(test::fixture("t5-cond-gen"), &report, &base);
  EXPECT_EQ(m->config().architecture(), "T5Model");
  EXPECT_TRUE(report.missing.empty() && report.unexpected.empty());
}

// A separate head whose checkpoint has none (transformers 5 ties the head of a T5 it initialised
// from an untied config, and saves only shared.weight) starts from the shared table; a checkpoint
// of older transformers carries a cross-attention relative_attention_bias no layer reads, which
// HF ignores on load and so does strata.
TEST(T5Model, UntiedHeadStartsFromTheSharedTableAndTheStrayCrossAttentionBiasIsIgnored) {
  const test::ScratchDir scratch;
  const std::string dir = test::copy_fixture_dir("t5-cond-gen", scratch);
  json cfg = io::read_json_file(dir + "/config.json");
  cfg.erase("scale_decoder_outputs");  // as the hub's v1.1 configs have it
  cfg["tie_word_embeddings"] = false;
  test::write_text(dir + "/config.json", cfg.dump());
  const auto hf = load_pretrained<float>(test::fixture("t5-cond-gen"));
  std::vector<io::TensorToWrite> tensors;
  for (const ParamEntry& e : hf->table().entries())
    tensors.push_back({e.name, DType::F32, e.shape, hf->params().data() + e.offset});
  const std::vector<float> stray(static_cast<size_t>(10 * 4), 0.5f);
  tensors.push_back({"decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight", DType::F32, {10, 4},
                     stray.data()});
  io::write_safetensors(dir + "/model.safetensors", tensors, {{"format", "pt"}});
  LoadReport report;
  const auto m = load_pretrained<float>(dir, &report);
  EXPECT_TRUE(report.missing.empty()) << report.missing.size();
  EXPECT_TRUE(report.unexpected.empty()) << report.unexpected.size();
  const ParamEntry& head = m->table().at("lm_head.weight");
  const ParamEntry& shared = m->table().at("shared.weight");
  EXPECT_EQ(std::memcmp(m->params().data() + head.offset, m->params().data() + shared.offset,
                        shared.numel * sizeof(float)),
            0);
}

// A training step with dropout gives the same bits on 1, 2 and 3 threads (the products in the
// kernels' default fixed tiles, the attention loops serial), as docs/numerics.md promises.
TEST(T5Model, TrainingStepIsBitIdenticalForAnyThreadCount) {
  const int saved_threads = kernels::num_threads();
  json j = tiny_t5_json(Variant::V1_1, 0.1f);
  j["d_model"] = 64;
  j["d_kv"] = 24;
  j["num_heads"] = 4;
  j["d_ff"] = 192;
  j["vocab_size"] = 500;
  j["relative_attention_num_buckets"] = 32;
  j["relative_attention_max_distance"] = 20;
  const ModelConfig c = parse_model_config(j, "medium t5 config.json");
  auto step = [&](int threads) {
    kernels::set_num_threads(threads);
    T5Model<float> m(c);
    m.init_weights(61);
    const Batch b = make_batch(m.config(), 4, 32, 24, 63);
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

// What a training step's state holds against the estimate: activation_values (saved tensors)
// and scratch_values (backward's working memory) bound what the buffers hold after a step,
// within a third of it.
TEST(T5Model, MemoryEstimateBoundsWhatAStepHolds) {
  for (Variant v : {Variant::Original, Variant::V1_1}) {
    SCOPED_TRACE(v == Variant::Original ? "original" : "v1.1");
    T5Model<float> m(tiny_t5(v, 0.1f));
    m.init_weights(1);
    const int B = 3, T = 6;
    const Batch b = make_batch(m.config(), B, T, T, 2);
    auto state = m.new_state();
    m.forward(b, nn::DropoutCtx{true, 1}, *state);
    m.loss(b, *state);
    m.backward(b, nn::DropoutCtx{true, 1}, *state);
    const auto& s = static_cast<const T5State<float>&>(*state);
    size_t saved = 0, scratch = 0;
    auto add = [](size_t& n, std::initializer_list<const Buffer<float>*> bs) {
      for (const Buffer<float>* x : bs) n += x->size();
    };
    saved += s.enc.held_values() + s.dec.held_values();
    for (const T5StackSaved<float>* st : {&s.enc_stack, &s.dec_stack}) add(saved, {&st->emb, &st->bias, &st->final_rstd, &st->out});
    add(saved, {&s.scaled, &s.logits});
    const auto& sc = s.scratch;
    add(scratch, {&sc.probs_a, &sc.probs_b, &sc.dq, &sc.dk, &sc.dv, &sc.dctx, &sc.d_h, &sc.t, &sc.wide_a, &sc.wide_b,
                  &sc.wide_c, &s.d_dec, &s.d_dec_next, &s.d_enc, &s.d_enc_next, &s.d_bias, &s.d_input, &s.dlogits});
    const size_t est_saved = m.activation_values(B, T).resident, est_scratch = m.scratch_values(B, T);
    EXPECT_GE(est_saved, saved);
    EXPECT_LE(est_saved, saved + saved / 3);
    EXPECT_GE(est_scratch, scratch);
    EXPECT_LE(est_scratch, scratch + scratch / 3);
  }
}

std::string config_error(json j) {
  try {
    parse_model_config(j, "t5/config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(T5BadInput, UnknownFeedForwardProjIsRefusedNamingFileAndField) {
  for (const char* proj : {"swiglu", "gated-foo", "ungated-gelu", "gated-gelu-new"}) {
    json j = tiny_t5_json(Variant::Original, 0);
    j["feed_forward_proj"] = proj;
    const std::string err = config_error(j);
    EXPECT_NE(err.find("t5/config.json"), std::string::npos) << proj << ": " << err;
    EXPECT_NE(err.find("feed_forward_proj"), std::string::npos) << proj << ": " << err;
  }
  for (const char* proj : {"gated-silu", "gelu", "gated-relu"}) {
    json j = tiny_t5_json(Variant::Original, 0);
    j["feed_forward_proj"] = proj;
    EXPECT_EQ(config_error(j), "") << proj;
  }
}

TEST(T5BadInput, DegenerateBucketSettingsAreRefusedNamingTheFile) {
  json j = tiny_t5_json(Variant::Original, 0);
  j["relative_attention_num_buckets"] = 2;
  EXPECT_NE(config_error(j).find("relative_attention_num_buckets"), std::string::npos);
  j = tiny_t5_json(Variant::Original, 0);
  j["relative_attention_max_distance"] = 4;  // not past the decoder's 4 exact buckets
  EXPECT_NE(config_error(j).find("relative_attention_max_distance"), std::string::npos);
}

// A checkpoint whose relative_attention_bias disagrees with the config's bucket count: one
// message naming the directory, the tensor, its shape and the config's.
TEST(T5BadInput, BucketTensorOfAnotherShapeIsRefusedNamingFileAndTensor) {
  const test::ScratchDir scratch;
  const std::string dir = test::copy_fixture_dir("t5-cond-gen", scratch);
  json cfg = io::read_json_file(dir + "/config.json");
  cfg["relative_attention_num_buckets"] = 16;
  test::write_text(dir + "/config.json", cfg.dump());
  try {
    load_pretrained<float>(dir);
    FAIL() << "a [10, 4] bucket table loaded into a 16-bucket config";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(dir), std::string::npos) << msg;
    EXPECT_NE(msg.find("encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("[10, 4]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[16, 4]"), std::string::npos) << msg;
  }
}

TEST(T5BadInput, ABaseModelLossIsRefused) {
  const Batch b = make_batch(tiny_t5(Variant::Original, 0), 2, 6, 4, 5);
  const Task base = Task::Base;
  const ModelConfig bc = parse_model_config(tiny_t5_json(Variant::Original, 0), "t5/config.json", &base);
  T5Model<double> bm(bc);
  auto bst = bm.new_state();
  bm.forward(b, nn::DropoutCtx{false, 0}, *bst);
  EXPECT_THROW(bm.loss(b, *bst), Error);
}

}  // namespace
}  // namespace strata
