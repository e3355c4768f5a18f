// Tensor parallelism's math in one process: P threads play the tensor-parallel ranks, with a
// group whose collectives add (or take the max of) the ranks' buffers in rank order. Checked:
// the slices of a parameter put back give the whole tensor; vocabulary-parallel cross entropy
// equals the unsplit loss and its gradient; a GPT-2 causal LM, a BERT masked LM, BART and T5
// (relu with the tied head, gated-gelu with its own lm_head) conditional generation and BART
// sequence classification split over 2 and 3 ranks, with dropout on, give the unsplit loss, gradients (put back together),
// evaluation logits, and identical gradients of the replicated parameters on every rank (fp64,
// to rounding); BART's and T5's decoders (cached and recomputing) give every rank the unsplit
// next-token logits; their memory estimates count what a split rank's step holds; heads a degree
// does not divide are refused naming the config field.
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <functional>
#include <random>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/ops.h"
#include "models/bart/bart_model.h"
#include "models/causal_decoder.h"
#include "models/registry.h"
#include "models/t5/t5_model.h"
#include "models/tensor_split.h"
#include "nn/vocab_parallel.h"
#include "test_util_model.h"
#include "util/error.h"

namespace strata {
namespace {

// The ranks' collectives over shared memory: each rank posts its buffer, all wait, each
// combines every posted buffer in rank order (so all ranks get identical values), all wait.
class SimGroup {
 public:
  explicit SimGroup(int P) : P_(P), posted_(P), sync_(P) {}
  template <typename T>
  nn::TensorGroup<T> bind(int rank) {
    nn::TensorGroup<T> g;
    g.degree = P_;
    g.rank = rank;
    g.all_reduce_sum = [this, rank](T* x, size_t n) { combine(rank, x, n, [](double a, double b) { return a + b; }); };
    g.all_reduce_max = [this, rank](T* x, size_t n) { combine(rank, x, n, [](double a, double b) { return std::max(a, b); }); };
    g.all_reduce_sum_f64 = [this, rank](double* x, size_t n) { combine(rank, x, n, [](double a, double b) { return a + b; }); };
    return g;
  }
  // Runs fn(rank) on P threads.
  void run(const std::function<void(int)>& fn) {
    std::vector<std::thread> ts;
    for (int r = 0; r < P_; ++r) ts.emplace_back([&, r] { fn(r); });
    for (auto& t : ts) t.join();
  }

 private:
  template <typename T, typename Op>
  void combine(int rank, T* x, size_t n, Op op) {
    posted_[rank].assign(x, x + n);
    sync_.arrive_and_wait();
    for (size_t i = 0; i < n; ++i) {
      double v = posted_[0][i];
      for (int r = 1; r < P_; ++r) v = op(v, posted_[r][i]);
      x[i] = static_cast<T>(v);
    }
    sync_.arrive_and_wait();
  }
  int P_;
  std::vector<std::vector<double>> posted_;
  std::barrier<> sync_;
};

TEST(TensorSplit, SlicesPutBackGiveTheWholeTensor) {
  // A fused q | k | v Conv1D weight [4, 12] cut along dim 1 in 3 parts over 2 ranks: rank 1
  // holds columns 2-3, 6-7 and 10-11.
  ParamTable t;
  t.add_split("w", {4, 12}, false, 1, 3, 2);
  const ParamEntry& e = t.entries()[0];
  EXPECT_EQ(e.shape, (std::vector<int64_t>{4, 6}));
  std::vector<double> whole(48), back(48, -1), slice(24);
  for (size_t i = 0; i < whole.size(); ++i) whole[i] = static_cast<double>(i);
  take_slice(e, TensorSplit{2, 1}, whole.data(), slice.data());
  EXPECT_EQ((std::vector<double>(slice.begin(), slice.begin() + 6)), (std::vector<double>{2, 3, 6, 7, 10, 11}));
  for (int r = 0; r < 2; ++r) {
    take_slice(e, TensorSplit{2, r}, whole.data(), slice.data());
    put_slice(e, TensorSplit{2, r}, slice.data(), back.data());
  }
  EXPECT_EQ(back, whole);
  // Rows (a row-parallel weight, a vocabulary-parallel table) over 3 ranks.
  ParamTable rows;
  rows.add_split("wte", {6, 5}, false, 0, 1, 3);
  const ParamEntry& r = rows.entries()[0];
  std::vector<double> w(30), piece(10);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<double>(i);
  take_slice(r, TensorSplit{3, 2}, w.data(), piece.data());
  EXPECT_EQ(piece[0], 20);
  EXPECT_EQ(piece[9], 29);
  EXPECT_THROW(rows.add_split("bad", {7, 5}, false, 0, 1, 3), Error);
}

TEST(VocabParallelCrossEntropy, EqualsTheUnsplitLossAndGradient) {
  const int N = 7, V = 12;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal(0, 3);
  std::vector<double> logits(N * V);
  for (double& x : logits) x = normal(rng);
  const std::vector<int32_t> labels = {0, 11, -100, 5, 6, 3, 9};
  std::vector<double> ref_grad(N * V);
  const double ref = kernels::cross_entropy(logits.data(), labels.data(), ref_grad.data(), N, V, 4.0);
  for (int P : {2, 3}) {
    SimGroup g(P);
    std::vector<double> losses(P), grad(N * V);
    g.run([&](int r) {
      const nn::TensorGroup<double> tp = g.bind<double>(r);
      const nn::VocabSlice s{r * V / P, V / P};
      std::vector<double> mine(N * s.rows), dmine(N * s.rows);
      for (int n = 0; n < N; ++n)
        std::copy_n(logits.data() + n * V + s.v0, s.rows, mine.data() + n * s.rows);
      nn::VocabParallelCeScratch<double> sc;
      losses[r] = nn::vocab_parallel_cross_entropy(s, &tp, mine.data(), labels.data(), dmine.data(), N, 4.0, sc);
      for (int n = 0; n < N; ++n) std::copy_n(dmine.data() + n * s.rows, s.rows, grad.data() + n * V + s.v0);
    });
    for (int r = 0; r < P; ++r) EXPECT_NEAR(losses[r], ref, 1e-12) << "P " << P << " rank " << r;
    for (size_t i = 0; i < grad.size(); ++i) EXPECT_NEAR(grad[i], ref_grad[i], 1e-14) << "P " << P << " at " << i;
  }
}

nlohmann::json gpt2_json() {
  return {{"model_type", "gpt2"}, {"architectures", {"GPT2LMHeadModel"}}, {"vocab_size", 30}, {"n_positions", 16},
          {"n_embd", 12}, {"n_layer", 2}, {"n_head", 6}, {"resid_pdrop", 0.1}, {"embd_pdrop", 0.1},
          {"attn_pdrop", 0.1}, {"initializer_range", 0.2}, {"pad_token_id", 0}};
}

nlohmann::json bert_json() {
  return {{"model_type", "bert"}, {"architectures", {"BertForMaskedLM"}}, {"vocab_size", 30}, {"hidden_size", 12},
          {"num_hidden_layers", 2}, {"num_attention_heads", 6}, {"intermediate_size", 24},
          {"max_position_embeddings", 16}, {"type_vocab_size", 2}, {"hidden_dropout_prob", 0.1},
          {"attention_probs_dropout_prob", 0.1}, {"initializer_range", 0.2}, {"pad_token_id", 0}};
}

// BART with as many heads in the decoder as in the encoder but FFNs of two widths, dropout on
// everywhere (activation_dropout drops inside the split FFN).
nlohmann::json bart_json() {
  return {{"model_type", "bart"}, {"architectures", {"BartForConditionalGeneration"}}, {"vocab_size", 30},
          {"d_model", 12}, {"encoder_layers", 2}, {"decoder_layers", 2}, {"encoder_attention_heads", 6},
          {"decoder_attention_heads", 6}, {"encoder_ffn_dim", 12}, {"decoder_ffn_dim", 18},
          {"max_position_embeddings", 16}, {"dropout", 0.1}, {"attention_dropout", 0.1},
          {"activation_dropout", 0.1}, {"init_std", 0.2}, {"scale_embedding", true}, {"pad_token_id", 1},
          {"eos_token_id", 2}, {"decoder_start_token_id", 2}};
}

// T5 whose heads' width 6 x 3 differs from d_model 8; relu with the tied, scaled head (gated:
// false) or gated-gelu with an lm_head of its own.
nlohmann::json t5_json(bool gated) {
  return {{"model_type", "t5"}, {"architectures", {"T5ForConditionalGeneration"}}, {"vocab_size", 30},
          {"d_model", 8}, {"d_kv", 3}, {"d_ff", 12}, {"num_heads", 6}, {"num_layers", 2},
          {"num_decoder_layers", 2}, {"relative_attention_num_buckets", 8}, {"relative_attention_max_distance", 6},
          {"dropout_rate", 0.1}, {"initializer_factor", 0.5}, {"feed_forward_proj", gated ? "gated-gelu" : "relu"},
          {"tie_word_embeddings", !gated}, {"pad_token_id", 0}, {"eos_token_id", 1}, {"decoder_start_token_id", 0}};
}

Batch lm_batch(const ModelConfig& c) {
  std::mt19937_64 rng(11);
  return test::padded_batch(c, 3, 9, rng, [&](Batch& out, int t, bool real, int id) {
    out.labels.push_back(real && t % 4 != 2 ? id : -100);
  });
}

// Padded sources of 9 tokens and targets of their own length, -100 after the odd rows' ends.
Batch seq2seq_batch_of(const ModelConfig& c, int Td) {
  std::mt19937_64 rng(12);
  Batch b = test::padded_batch(c, 3, 9, rng, [](Batch&, int, bool, int) {});
  b.Td = Td;
  for (int r = 0; r < b.B; ++r)
    for (int t = 0; t < b.Td; ++t) b.labels.push_back(r % 2 && t >= 4 ? -100 : test::uniform_int(rng, 2, c.vocab_size));
  return b;
}
Batch seq2seq_batch(const ModelConfig& c) { return seq2seq_batch_of(c, 6); }

size_t elements(const HeadOutput<double>& o) {
  size_t n = 1;
  for (int64_t d : o.shape) n *= static_cast<size_t>(d);
  return n;
}

// The model of `json` split over 2 and 3 threads against the whole model.
void check_split_reproduces_whole(const nlohmann::json& json, Batch (*make_batch)(const ModelConfig&) = lm_batch) {
  const ModelConfig cfg = parse_model_config(json, "test config");
  const Batch b = make_batch(cfg);
  const nn::DropoutCtx drop{true, 1234};
  // The whole model: loss, gradients, evaluation logits.
  auto whole = make_model<double>(cfg);
  whole->init_weights(5);
  auto ws = whole->new_state();
  whole->forward(b, drop, *ws);
  const double ref_loss = whole->loss(b, *ws).loss;
  whole->grads().zero();
  whole->backward(b, drop, *ws);
  whole->infer(b, *ws);
  const HeadOutput<double> ref_out = whole->head_outputs(b, *ws)[0];
  const std::vector<double> ref_logits(ref_out.data, ref_out.data + elements(ref_out));
  const double scale = *std::max_element(whole->grads().data(), whole->grads().data() + whole->grads().size(),
                                         [](double x, double y) { return std::abs(x) < std::abs(y); });
  for (int P : {2, 3}) {
    SimGroup g(P);
    std::vector<double> losses(P), grads(whole->grads().size(), 0.0), logits;
    std::vector<std::vector<double>> replicated(P);
    g.run([&](int r) {
      ModelConfig mine = cfg;
      mine.tensor_split = {P, r};
      auto m = make_model<double>(mine);
      m->init_weights(5);
      m->set_tensor_group(g.bind<double>(r));
      auto s = m->new_state();
      m->forward(b, drop, *s);
      losses[r] = m->loss(b, *s).loss;
      m->grads().zero();
      m->backward(b, drop, *s);
      for (const ParamEntry& e : m->table().entries()) {
        const ParamEntry& w = whole->table().at(e.name);
        if (e.replicated())
          replicated[r].insert(replicated[r].end(), m->grads().data() + e.offset, m->grads().data() + e.offset + e.numel);
        if (!e.replicated() || r == 0) put_slice(e, mine.tensor_split, m->grads().data() + e.offset, grads.data() + w.offset);
      }
      m->infer(b, *s);
      if (r == 0) logits.assign(m->head_outputs(b, *s)[0].data, m->head_outputs(b, *s)[0].data + ref_logits.size());
    });
    for (int r = 0; r < P; ++r) {
      EXPECT_NEAR(losses[r], ref_loss, 1e-12) << "P " << P << " rank " << r;
      EXPECT_EQ(replicated[r], replicated[0]) << "replicated gradients differ between ranks 0 and " << r;
    }
    double worst = 0;
    for (size_t i = 0; i < grads.size(); ++i) worst = std::max(worst, std::abs(grads[i] - whole->grads()[i]));
    EXPECT_LT(worst / std::abs(scale), 1e-12) << "P " << P;
    for (size_t i = 0; i < logits.size(); ++i) ASSERT_NEAR(logits[i], ref_logits[i], 1e-12) << "P " << P;
  }
}

TEST(TensorParallelModels, Gpt2SplitRanksReproduceTheWholeModel) { check_split_reproduces_whole(gpt2_json()); }

TEST(TensorParallelModels, BertSplitRanksReproduceTheWholeModel) { check_split_reproduces_whole(bert_json()); }

TEST(TensorParallelModels, BartSplitRanksReproduceTheWholeModel) {
  check_split_reproduces_whole(bart_json(), seq2seq_batch);
}

// BART's classification head is whole on every rank, over the split decoder's state at each
// row's eos (the last real token; no other).
TEST(TensorParallelModels, BartSequenceClassificationSplitRanksReproduceTheWholeModel) {
  nlohmann::json j = bart_json();
  j["architectures"] = {"BartForSequenceClassification"};
  j["num_labels"] = 3;
  j["classifier_dropout"] = 0.1;
  check_split_reproduces_whole(j, [](const ModelConfig& c) {
    std::mt19937_64 rng(13);
    return test::padded_batch(
        c, 3, 9, rng, [](Batch& b, int, bool real, int id) {
          if (real && id == 2) b.input_ids.back() = 5;
        },
        [&](Batch& b, int r, int len) {
          b.input_ids[static_cast<size_t>(r) * b.T + len - 1] = 2;
          b.labels.push_back(test::uniform_int(rng, 0, 3));
        });
  });
}

TEST(TensorParallelModels, T5SplitRanksReproduceTheWholeModel) {
  for (bool gated : {false, true}) {
    SCOPED_TRACE(gated ? "gated-gelu, untied" : "relu, tied");
    check_split_reproduces_whole(t5_json(gated), seq2seq_batch);
  }
}

// Generation under tensor parallelism: every rank of the group, fed the same ids, gets the whole
// model's next-token logits from the cached decoder and from the recomputing one (which reads the
// gathered head outputs), through steps of one and of several tokens and a beam-search reorder;
// so every rank picks the same tokens and the ranks' collectives stay in step.
void check_split_decoders_reproduce_whole(const nlohmann::json& json) {
  const ModelConfig cfg = parse_model_config(json, "test config");
  const int V = cfg.vocab_size, P = 2, B = 3;
  const std::vector<int32_t> source = {5, 9, 3, 17, 4, 8, 2};
  const int32_t start = json["decoder_start_token_id"].get<int32_t>();
  const std::vector<std::vector<int32_t>> steps = {{start, start, start}, {5, 6, 7, 8, 9, 10}, {11, 12, 13}};
  // logits[cache][step]: the whole model's, then each rank's
  auto decode = [&](const Model<double>& m, bool use_cache) {
    const auto d = make_seq2seq_decoder(m, source, use_cache);
    d->reset(B, 10);
    std::vector<std::vector<double>> out;
    for (size_t s = 0; s < steps.size(); ++s) {
      if (s == 2) d->reorder({2, 0, 0});
      const double* l = d->append(steps[s].data(), static_cast<int>(steps[s].size()) / B);
      out.emplace_back(l, l + static_cast<size_t>(B) * V);
    }
    return out;
  };
  auto whole = make_model<double>(cfg);
  whole->init_weights(5);
  for (bool use_cache : {true, false}) {
    SCOPED_TRACE(use_cache ? "cached decoder" : "recomputing decoder");
    const auto ref = decode(*whole, use_cache);
    SimGroup g(P);
    std::vector<std::vector<std::vector<double>>> got(P);
    g.run([&](int r) {
      ModelConfig mine = cfg;
      mine.tensor_split = {P, r};
      auto m = make_model<double>(mine);
      m->init_weights(5);
      m->set_tensor_group(g.bind<double>(r));
      got[r] = decode(*m, use_cache);
    });
    for (int r = 0; r < P; ++r)
      for (size_t s = 0; s < ref.size(); ++s)
        for (size_t i = 0; i < ref[s].size(); ++i)
          ASSERT_NEAR(got[r][s][i], ref[s][i], 1e-12 * (1 + std::abs(ref[s][i]))) << "rank " << r << " step " << s;
    EXPECT_EQ(got[1], got[0]);
  }
}

TEST(TensorParallelModels, BartSplitDecodersGiveEveryRankTheWholeModelsLogits) {
  check_split_decoders_reproduce_whole(bart_json());
}

TEST(TensorParallelModels, T5SplitDecodersGiveEveryRankTheWholeModelsLogits) {
  for (bool gated : {false, true}) {
    SCOPED_TRACE(gated ? "gated-gelu, untied" : "relu, tied");
    check_split_decoders_reproduce_whole(t5_json(gated));
  }
}

// What a rank's training step holds against its memory estimate, which counts the rank's heads,
// FFN columns and vocabulary columns: each stack's blocks hold exactly what block_footprint
// counts for them (as one process's do, tests/test_activation_policy.cpp), and backward's
// working memory (d(loss)/d(logits) included) is within scratch_values and a third below it.
template <typename State>
std::pair<size_t, size_t> held_by_stacks(const ModelState& state) {
  const auto& s = static_cast<const State&>(state);
  return {s.enc.held_values(), s.dec.held_values()};
}
template <typename State>
size_t scratch_held(const ModelState& state) {
  const auto& s = static_cast<const State&>(state);
  const auto& sc = s.scratch;
  size_t n = 0;
  for (const Buffer<double>* b : {&sc.probs_a, &sc.probs_b, &sc.dq, &sc.dk, &sc.dv, &sc.dctx, &sc.d_h, &sc.t,
                                  &sc.wide_a, &sc.wide_b, &sc.wide_c, &s.d_dec, &s.d_dec_next, &s.d_enc,
                                  &s.d_enc_next, &s.d_input, &s.dlogits})
    n += b->size();
  if constexpr (std::is_same_v<State, T5State<double>>) n += s.d_bias.size();
  return n;
}

TEST(TensorParallelModels, EncoderDecoderMemoryEstimateCountsWhatASplitStepHolds) {
  for (const nlohmann::json& json : {bart_json(), t5_json(false), t5_json(true)}) {
    SCOPED_TRACE(json.dump());
    const bool bart = json["model_type"] == "bart";
    const ModelConfig cfg = parse_model_config(json, "test config");
    const Batch b = seq2seq_batch_of(cfg, 9);  // targets as long as the sources: the estimate's one length
    const nn::DropoutCtx drop{true, 3};
    SimGroup g(2);
    g.run([&](int r) {
      ModelConfig mine = cfg;
      mine.tensor_split = {2, r};
      auto m = make_model<double>(mine);
      m->init_weights(5);
      m->set_tensor_group(g.bind<double>(r));
      auto s = m->new_state();
      m->forward(b, drop, *s);
      m->loss(b, *s);
      m->backward(b, drop, *s);
      const Model<double>::ActivationTerms t = m->activation_terms(b.B, b.T);
      const nn::ActivationFootprint enc = nn::block_footprint({}, 0, t.blocks, t.block_saved, t.boundary);
      const nn::ActivationFootprint dec =
          nn::block_footprint({}, t.blocks, t.blocks + t.decoder_blocks, t.decoder_saved, t.decoder_boundary);
      EXPECT_EQ(bart ? held_by_stacks<BartState<double>>(*s) : held_by_stacks<T5State<double>>(*s),
                std::pair(enc.resident, dec.resident))
          << "rank " << r;
      const size_t scratch = bart ? scratch_held<BartState<double>>(*s) : scratch_held<T5State<double>>(*s);
      const size_t estimate = m->scratch_values(b.B, b.T);
      EXPECT_GE(estimate, scratch) << "rank " << r;
      EXPECT_LE(estimate, scratch + scratch / 3) << "rank " << r;
    });
  }
}

// A degree that does not divide an encoder-decoder's heads (BART's decoder may have its own) or
// its FFN width is refused naming the field and config.json.
TEST(TensorParallelModels, EncoderDecoderHeadsTheDegreeDoesNotDivideAreRefused) {
  auto refusal = [](nlohmann::json j, int P) {
    ModelConfig c = parse_model_config(j, "test config");
    c.tensor_split = {P, 0};
    try {
      make_model<float>(c);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  nlohmann::json bart = bart_json();
  bart["decoder_attention_heads"] = 3;
  std::string err = refusal(bart, 2);
  EXPECT_NE(err.find("tensor_parallel_degree 2 does not divide decoder_attention_heads (3 in config.json)"),
            std::string::npos)
      << err;
  err = refusal(t5_json(false), 4);
  EXPECT_NE(err.find("tensor_parallel_degree 4 does not divide num_heads (6 in config.json)"), std::string::npos)
      << err;
  nlohmann::json t5 = t5_json(true);
  t5["d_ff"] = 9;
  err = refusal(t5, 3);
  EXPECT_EQ(err, "") << "d_ff 9, num_heads 6 and vocab_size 30 split 3 ways";
  err = refusal(t5, 2);
  EXPECT_NE(err.find("does not divide d_ff (9 in config.json)"), std::string::npos) << err;
}

}  // namespace
}  // namespace strata
