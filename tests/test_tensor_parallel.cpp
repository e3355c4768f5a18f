// Tensor parallelism's math in one process: P threads play the tensor-parallel ranks, with a
// group whose collectives add (or take the max of) the ranks' buffers in rank order. Checked:
// the slices of a parameter put back give the whole tensor; vocabulary-parallel cross entropy
// equals the unsplit loss and its gradient; a GPT-2 causal LM and a BERT masked LM split over 2
// and 3 ranks, with dropout on, give the unsplit loss, gradients (put back together),
// evaluation logits, and identical gradients of the replicated parameters on every rank (fp64,
// to rounding).
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/ops.h"
#include "models/registry.h"
#include "models/tensor_split.h"
#include "nn/vocab_parallel.h"
#include "test_util_model.h"

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

Batch lm_batch(const ModelConfig& c) {
  std::mt19937_64 rng(11);
  return test::padded_batch(c, 3, 9, rng, [&](Batch& out, int t, bool real, int id) {
    out.labels.push_back(real && t % 4 != 2 ? id : -100);
  });
}

// The model of `json` split over 2 and 3 threads against the whole model.
void check_split_reproduces_whole(const nlohmann::json& json) {
  const ModelConfig cfg = parse_model_config(json, "test config");
  const Batch b = lm_batch(cfg);
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
  const std::vector<double> ref_logits(whole->head_outputs(b, *ws)[0].data,
                                       whole->head_outputs(b, *ws)[0].data + static_cast<size_t>(b.B) * b.T * 30);
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

}  // namespace
}  // namespace strata
