// Activation checkpointing and offloading (nn/block_activations.h) change where the blocks'
// saved tensors live, never a result: for every architecture, with dropout on, the loss, every
// gradient and the parameters after 3 AdamW steps are bit for bit those of the plain run, for
// checkpointing every block and every 2nd block, offloading, and both; also when the model
// runs as two unit ranges (pipeline stages) with their own states. Plus the estimate's
// bookkeeping (block_footprint, also against what an encoder-decoder's two stacks hold) and
// the offload pool's errors.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/albert/albert_model.h"
#include "models/bart/bart_model.h"
#include "models/bert/encoder_model.h"
#include "models/gpt2/gpt2_model.h"
#include "models/batch_checks.h"
#include "models/memory_estimate.h"
#include "models/registry.h"
#include "models/t5/t5_model.h"
#include "tensor/file_pool.h"
#include "test_util_fs.h"
#include "test_util_model.h"
#include "train/mixed_precision.h"
#include "train/optimizer.h"

namespace strata {
namespace {

using nlohmann::json;
using test::uniform_int;

// Five blocks (ALBERT: three repeats of a shared group of two layers, six applications), so
// that with offloading three records go through the pool and two stay in the ring; BART and
// T5 (v1.1's gated FFN, untied head) three in each stack, which keeps its blocks apart.
json tiny_json(const std::string& arch) {
  const json common = {{"vocab_size", 29}, {"max_position_embeddings", 16}, {"initializer_range", 0.2},
                       {"pad_token_id", 0}};
  json j = common;
  if (arch == "bart") {
    j.update({{"model_type", "bart"}, {"architectures", {"BartForConditionalGeneration"}}, {"d_model", 8},
              {"encoder_layers", 3}, {"decoder_layers", 3}, {"encoder_attention_heads", 2},
              {"decoder_attention_heads", 1}, {"encoder_ffn_dim", 12}, {"decoder_ffn_dim", 10}, {"dropout", 0.1},
              {"attention_dropout", 0.1}, {"activation_dropout", 0.1}, {"init_std", 0.2},
              {"decoder_start_token_id", 2}});
  } else if (arch == "t5") {
    j.update({{"model_type", "t5"}, {"architectures", {"T5ForConditionalGeneration"}}, {"d_model", 8}, {"d_kv", 3},
              {"d_ff", 10}, {"num_heads", 2}, {"num_layers", 3}, {"num_decoder_layers", 3},
              {"relative_attention_num_buckets", 8}, {"relative_attention_max_distance", 6}, {"dropout_rate", 0.1},
              {"feed_forward_proj", "gated-gelu"}, {"tie_word_embeddings", false}, {"initializer_factor", 0.5},
              {"decoder_start_token_id", 0}});
  } else if (arch == "gpt2") {
    j.update({{"model_type", "gpt2"}, {"architectures", {"GPT2LMHeadModel"}}, {"n_positions", 16}, {"n_embd", 8},
              {"n_layer", 5}, {"n_head", 2}, {"resid_pdrop", 0.1}, {"embd_pdrop", 0.1}, {"attn_pdrop", 0.1}});
  } else if (arch == "distilbert") {
    j.update({{"model_type", "distilbert"}, {"architectures", {"DistilBertForTokenClassification"}}, {"dim", 8},
              {"n_layers", 5}, {"n_heads", 2}, {"hidden_dim", 16}, {"dropout", 0.1}, {"attention_dropout", 0.1},
              {"num_labels", 3}});
  } else if (arch == "albert") {
    j.update({{"model_type", "albert"}, {"architectures", {"AlbertForPreTraining"}}, {"embedding_size", 6},
              {"hidden_size", 8}, {"num_hidden_layers", 3}, {"num_hidden_groups", 1}, {"inner_group_num", 2},
              {"num_attention_heads", 2}, {"intermediate_size", 16}, {"hidden_dropout_prob", 0.1},
              {"attention_probs_dropout_prob", 0.1}, {"classifier_dropout_prob", 0.1}, {"type_vocab_size", 2}});
  } else {  // bert (masked LM), roberta (sequence classification)
    const bool bert = arch == "bert";
    j.update({{"model_type", arch},
              {"architectures", {bert ? "BertForMaskedLM" : "RobertaForSequenceClassification"}},
              {"hidden_size", 8}, {"num_hidden_layers", 5}, {"num_attention_heads", 2}, {"intermediate_size", 16},
              {"hidden_dropout_prob", 0.1}, {"attention_probs_dropout_prob", 0.1}, {"type_vocab_size", bert ? 2 : 1}});
    if (!bert) j.update({{"num_labels", 3}, {"max_position_embeddings", 20}, {"pad_token_id", 1}});
  }
  return j;
}

// 3 rows of 9 tokens; sequence to sequence: targets Td long (odd rows shorter, -100 after).
Batch make_batch(const ModelConfig& c, uint64_t seed, int Td = 5) {
  std::mt19937_64 rng(seed);
  const bool per_token = c.task == Task::MaskedLM || c.task == Task::PreTraining || c.task == Task::CausalLM ||
                         c.task == Task::TokenClassification;
  const int classes = c.task == Task::TokenClassification ? c.num_labels : c.vocab_size;
  Batch b = test::padded_batch(
      c, 3, 9, rng,
      [&](Batch& out, int t, bool real, int) {
        if (per_token) out.labels.push_back(real && t % 3 != 1 ? uniform_int(rng, 0, classes) : -100);
      },
      [&](Batch& out, int r, int) {
        if (c.task == Task::SequenceClassification) out.labels.push_back(uniform_int(rng, 0, c.num_labels));
        if (c.task == Task::PreTraining) out.sentence_order_label.push_back(r % 2);
        if (c.task != Task::Seq2SeqLM) return;
        out.Td = Td;
        const int len = Td - (r % 2) * Td / 3;
        for (int t = 0; t < Td; ++t) out.labels.push_back(t < len ? uniform_int(rng, 0, classes) : -100);
      });
  check_batch(c, b, "generated batch");
  return b;
}

struct TrainRun {
  std::vector<double> losses;                    // per step
  std::vector<float> first_grads, final_params;  // gradients of step 1; parameters after step 3
  std::vector<float> inferred;                   // the head's first output of infer() after step 1
};

// Three AdamW steps with dropout on. split > 0 runs units [0, split) and [split, end) with a
// state each, as two pipeline stages would.
TrainRun train(const std::string& arch, const nn::ActivationPolicy& policy, int split = 0) {
  const auto m = make_model<float>(parse_model_config(tiny_json(arch), arch + " config"));
  test::init_perturbed(*m, 5);
  OptimizerConfig oc;
  oc.lr = 1e-2;
  oc.weight_decay = 0.01;
  Optimizer<float> opt(oc, m->table());
  const auto first = m->new_state(policy), second = m->new_state(policy);
  TrainRun r;
  for (int step = 0; step < 3; ++step) {
    const Batch b = make_batch(m->config(), 10 + step);
    const nn::DropoutCtx drop{true, 100 + static_cast<uint64_t>(step)};
    m->grads().zero();
    if (split == 0) {
      m->forward(b, drop, *first);
      r.losses.push_back(m->loss(b, *first).loss);
      m->backward(b, drop, *first);
    } else {
      const float* h = m->forward(b, drop, {0, split}, nullptr, *first);
      m->forward(b, drop, {split, m->num_units()}, h, *second);
      r.losses.push_back(m->loss(b, *second).loss);
      const float* dh = m->backward(b, drop, {split, m->num_units()}, nullptr, *second);
      m->backward(b, drop, {0, split}, dh, *first);
    }
    if (step == 0) {
      r.first_grads.assign(m->grads().data(), m->grads().data() + m->grads().size());
      // Evaluation between steps reuses the state's buffers; training must go on unharmed.
      m->infer(b, *first);
      const HeadOutput<float> o = m->head_outputs(b, *first).at(0);
      size_t n = 1;
      for (int64_t d : o.shape) n *= static_cast<size_t>(d);
      r.inferred.assign(o.data, o.data + n);
    }
    opt.step(m->params().data(), m->grads().data(), 1e-2);
  }
  r.final_params.assign(m->params().data(), m->params().data() + m->params().size());
  return r;
}

void expect_identical(const TrainRun& got, const TrainRun& want) {
  EXPECT_EQ(got.losses, want.losses);
  EXPECT_EQ(got.inferred, want.inferred);
  ASSERT_EQ(got.first_grads.size(), want.first_grads.size());
  EXPECT_EQ(0, std::memcmp(got.first_grads.data(), want.first_grads.data(), want.first_grads.size() * sizeof(float)))
      << "gradients differ";
  EXPECT_EQ(0, std::memcmp(got.final_params.data(), want.final_params.data(), want.final_params.size() * sizeof(float)))
      << "parameters after 3 AdamW steps differ";
}

nn::ActivationPolicy policy(int checkpoint_every, bool offload) {
  nn::ActivationPolicy p;
  p.checkpoint_every = checkpoint_every;
  p.offload = offload;
  p.offload_dir = testing::TempDir();
  return p;
}

class ActivationPolicies : public testing::TestWithParam<std::string> {};

TEST_P(ActivationPolicies, EveryPolicyTrainsBitIdentically) {
  const TrainRun plain = train(GetParam(), {});
  ASSERT_GT(plain.losses[0], 0);
  for (const auto& [every, offload] : std::vector<std::pair<int, bool>>{{1, false}, {2, false}, {0, true}, {2, true}, {1, true}}) {
    SCOPED_TRACE(testing::Message() << "checkpoint every " << every << (offload ? ", offloaded" : ""));
    expect_identical(train(GetParam(), policy(every, offload)), plain);
  }
}

TEST_P(ActivationPolicies, TwoStagesWithTheirOwnStatesTrainBitIdentically) {
  const TrainRun plain = train(GetParam(), {});
  // Units [0, 3) and [3, end): each stage checkpoints and offloads over its own blocks.
  expect_identical(train(GetParam(), policy(2, true), 3), plain);
  expect_identical(train(GetParam(), policy(1, false), 3), plain);
  // ... and cut before the last block (an encoder-decoder's boundary on the decoder's side).
  const int last = make_model<float>(parse_model_config(tiny_json(GetParam()), "config"))->num_blocks();
  expect_identical(train(GetParam(), policy(2, true), last), plain);
}

// Under bf16 / fp16 products the blocks keep their product inputs (q|k|v, contexts, normalised
// inputs) in 16 bits: the same bits as keeping them whole, under every policy, for two
// stages, and with an evaluation between steps writing into the halved records.
TEST_P(ActivationPolicies, ProductInputsKeptInHalfPrecisionTrainBitIdentically) {
  for (const kernels::MatmulPrecision p : {kernels::MatmulPrecision::Bf16, kernels::MatmulPrecision::Fp16}) {
    SCOPED_TRACE(kernels::precision_name(p));
    const MatmulPrecisionScope products(p, kernels::MatmulPath::Emulated);
    const TrainRun whole = train(GetParam(), {});  // policy: fp32, inputs kept whole
    for (const auto& [every, offload] :
         std::vector<std::pair<int, bool>>{{0, false}, {1, false}, {2, false}, {0, true}, {2, true}}) {
      SCOPED_TRACE(testing::Message() << "checkpoint every " << every << (offload ? ", offloaded" : ""));
      nn::ActivationPolicy halved = policy(every, offload);
      halved.products = p;
      expect_identical(train(GetParam(), halved), whole);
      if (every == 2 && offload) expect_identical(train(GetParam(), halved, 3), whole);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, ActivationPolicies,
                         testing::Values("bert", "roberta", "distilbert", "albert", "gpt2", "bart", "t5"),
                         [](const auto& info) { return info.param; });

TEST(ActivationPolicies, DropoutMasksDifferPerStepSoTheComparisonHasTeeth) {
  // The policies could only agree trivially if training did nothing: steps must change the loss.
  const TrainRun plain = train("gpt2", {});
  EXPECT_NE(plain.losses[0], plain.losses[1]);
  EXPECT_NE(plain.losses[1], plain.losses[2]);
}

// block_footprint's counts for 5 blocks, each saving S values besides its output, B between blocks.
TEST(ActivationFootprint, CountsWhatEachPolicyHolds) {
  const size_t S = 1000, B = 10;
  auto f = [&](int every, bool offload) { return nn::block_footprint(policy(every, offload), 0, 5, nn::BlockSaved{S}, B); };
  // Kept: 4 block inputs + hand-off + output, 5 saved states.
  EXPECT_EQ(f(0, false).resident, 6 * B + 5 * S);
  EXPECT_EQ(f(0, false).offloaded, 0u);
  // Every block recomputed: the inputs, hand-off, output, and one workspace with its output.
  EXPECT_EQ(f(1, false).resident, 6 * B + S + B);
  // Every 2nd (blocks 0, 2, 4): blocks 1 and 3 keep their saved state.
  EXPECT_EQ(f(2, false).resident, 6 * B + 2 * S + S + B);
  // Offloaded: records 0..2 go to the pool (record 0 has no input), two stay in the ring.
  EXPECT_EQ(f(0, true).offloaded, 3 * S + 2 * B);
  EXPECT_EQ(f(0, true).resident, 2 * B + 2 * (S + B));
  // Offloading a fully recomputed model moves the inputs only.
  EXPECT_EQ(f(1, true).offloaded, 2 * B);
  // Inference's two slots: records 0 and 1 (kept: only their outputs are new), the workspace
  // and record 1 (checkpointing: record 1 holds no saved state when every block is recomputed).
  EXPECT_EQ(f(0, false).inference, 2 * B);
  EXPECT_EQ(f(1, false).inference, S + B);
  EXPECT_EQ(f(2, false).inference, B);
  EXPECT_EQ(f(0, true).inference, 2 * B);
  // A range past the first block: its first record reads the caller's input.
  EXPECT_EQ(nn::block_footprint(policy(0, false), 3, 5, nn::BlockSaved{S}, B).resident, 3 * B + 2 * S);
}

// After a training step (encoder-decoders: targets as long as the sources, the estimate's one
// length) and after an evaluation pass, the blocks hold what block_footprint counts for them,
// under every policy, with product inputs whole (fp32) and halved (bf16). An encoder-decoder
// keeps each stack's blocks in a BlockActivations of its own.
std::pair<size_t, size_t> held_by_blocks(const std::string& arch, const ModelState& state) {
  if (arch == "bart") {
    const auto& s = static_cast<const BartState<float>&>(state);
    return {s.enc.held_values(), s.dec.held_values()};
  }
  if (arch == "t5") {
    const auto& s = static_cast<const T5State<float>&>(state);
    return {s.enc.held_values(), s.dec.held_values()};
  }
  if (arch == "gpt2") return {static_cast<const Gpt2State<float>&>(state).blocks.held_values(), 0};
  if (arch == "albert") return {static_cast<const AlbertState<float>&>(state).applications.held_values(), 0};
  return {static_cast<const EncoderState<float>&>(state).blocks.held_values(), 0};
}

TEST(ActivationFootprint, EveryArchitecturesBlocksHoldWhatTheEstimateCounts) {
  for (const kernels::MatmulPrecision products : {kernels::MatmulPrecision::Fp32, kernels::MatmulPrecision::Bf16}) {
    const MatmulPrecisionScope scope(products, kernels::MatmulPath::Emulated);
    for (const std::string arch : {"bert", "distilbert", "albert", "gpt2", "bart", "t5"})
      for (const auto& [every, offload] :
           std::vector<std::pair<int, bool>>{{0, false}, {1, false}, {2, false}, {0, true}, {2, true}}) {
        SCOPED_TRACE(testing::Message() << arch << " " << kernels::precision_name(products) << ", checkpoint every "
                                        << every << (offload ? ", offloaded" : ""));
        const auto m = make_model<float>(parse_model_config(tiny_json(arch), arch + " config"));
        test::init_perturbed(*m, 5);
        nn::ActivationPolicy p = policy(every, offload);
        p.products = products;
        const auto state = m->new_state(p);
        const Batch b = make_batch(m->config(), 10, /*Td=*/9);
        const nn::DropoutCtx drop{true, 100};
        m->forward(b, drop, *state);
        m->loss(b, *state);
        m->backward(b, drop, *state);
        const Model<float>::ActivationTerms t = m->activation_terms(b.B, b.T);
        const nn::ActivationFootprint enc = nn::block_footprint(p, 0, t.blocks, t.block_saved, t.boundary);
        const nn::ActivationFootprint dec = nn::block_footprint(p, t.blocks, t.blocks + t.decoder_blocks,
                                                                t.decoder_saved, t.decoder_boundary);
        EXPECT_EQ(held_by_blocks(arch, *state), std::pair(enc.resident, dec.resident));
        EXPECT_GE(state->offload_pool_bytes(), (enc.offloaded + dec.offloaded) * sizeof(float));
        m->infer(b, *state);
        // (The encoders' and GPT-2's inference blocks run in buffers of their own: the
        // estimate's inference term is the encoder-decoders' blocks' only.)
        if (t.decoder_blocks > 0)
          EXPECT_EQ(held_by_blocks(arch, *state),
                    std::pair(enc.resident + enc.inference, dec.resident + dec.inference));
      }
  }
}

// Halving saves (products - halves) per block but the last, against the one full set kept.
TEST(ActivationFootprint, HalvedProductInputsShrinkTheEstimate) {
  nn::BlockSaved s{1000};
  s.add_product_input(300);
  s.add_product_input(101);  // odd: 51 floats of halves
  EXPECT_EQ(s.products, 401u);
  EXPECT_EQ(s.halves, 150u + 51u);
  const size_t B = 10;
  nn::ActivationPolicy whole = policy(0, false), half = whole;
  half.products = kernels::MatmulPrecision::Bf16;
  EXPECT_EQ(nn::block_footprint(whole, 0, 5, s, B).resident, 6 * B + 5 * 1000);
  EXPECT_EQ(nn::block_footprint(half, 0, 5, s, B).resident, 6 * B + 5 * 1000 - 4 * (401 - 201));
  EXPECT_NE(half.describe().find("product inputs in bf16"), std::string::npos) << half.describe();
  // Every block recomputed: nothing is halved.
  half.checkpoint_every = 1;
  whole.checkpoint_every = 1;
  EXPECT_EQ(nn::block_footprint(half, 0, 5, s, B).resident, nn::block_footprint(whole, 0, 5, s, B).resident);
}

TEST(ActivationFootprint, CheckpointingShrinksTheEstimateOfAGpt2) {
  const auto m = make_model<float>(parse_model_config(tiny_json("gpt2"), "gpt2 config"));
  const MemoryEstimate plain = estimate_training_memory(*m, 4, 16);
  const MemoryEstimate ckpt = estimate_training_memory(*m, 4, 16, 4, 2, policy(1, false));
  EXPECT_LT(ckpt.activations, plain.activations);
  EXPECT_EQ(ckpt.parameters, plain.parameters);
  const MemoryEstimate off = estimate_training_memory(*m, 4, 16, 4, 2, policy(0, true));
  EXPECT_GT(off.offloaded, 0u);
  EXPECT_EQ(off.activations + off.offloaded, plain.activations);  // moved, not duplicated
}

TEST(FileBackedPool, RoundTripsAndNamesAnUnusableDirectory) {
  FileBackedPool pool(testing::TempDir());
  std::vector<float> data(3 << 20), back(data.size());  // 12 MiB: several pieces and a growth step
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) * 0.5f;
  std::byte* r = pool.allocate(data.size() * sizeof(float));
  FileBackedPool::store(r, data.data(), data.size() * sizeof(float));
  FileBackedPool::load(back.data(), r, back.size() * sizeof(float));
  EXPECT_EQ(back, data);
  EXPECT_GE(pool.file_bytes(), pool.peak_bytes());
  test::expect_error([] { FileBackedPool bad("/nonexistent/dir"); },
                     {"offload_activations", "/nonexistent/dir", "TMPDIR"});
}

}  // namespace
}  // namespace strata
