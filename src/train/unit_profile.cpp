#include "train/unit_profile.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "kernels/device.h"
#include "kernels/ops.h"
#include "models/batch_checks.h"
#include "models/registry.h"
#include "train/optimizer.h"
#include "util/error.h"
#include "util/median.h"
#include "util/rng.h"

namespace strata {

namespace {

using Clock = std::chrono::steady_clock;

// A time stamp after the work queued so far has run: on a GPU the host only queues kernels.
Clock::time_point after_queued_work() {
  kernels::synchronize();
  return Clock::now();
}

// Every position a real token (ids clear of the first few, which hold the special tokens and
// RoBERTa's padding), with the targets the task's loss reads.
Batch synthetic_batch(const ModelConfig& c, int B, int T) {
  Batch b;
  b.B = B;
  b.T = T;
  const size_t n = static_cast<size_t>(B) * T;
  const CounterRng rng(7, 0);
  const int first_id = std::min(5, c.vocab_size - 1);
  for (size_t i = 0; i < n; ++i)
    b.input_ids.push_back(first_id + static_cast<int32_t>(rng.bits(i) % static_cast<uint64_t>(c.vocab_size - first_id)));
  b.attention_mask.assign(n, 1);
  b.token_type_ids.assign(n, 0);
  auto draw = [&](size_t i, int below) { return static_cast<int32_t>(rng.bits(n + i) % static_cast<uint64_t>(below)); };
  switch (c.task) {
    case Task::SequenceClassification:
      if (c.num_labels == 1 || c.problem_type == ProblemType::Regression || c.problem_type == ProblemType::MultiLabel)
        for (size_t i = 0; i < static_cast<size_t>(B) * c.num_labels; ++i) b.float_labels.push_back(draw(i, 2));
      else
        for (int i = 0; i < B; ++i) b.labels.push_back(draw(static_cast<size_t>(i), c.num_labels));
      break;
    case Task::TokenClassification:
      for (size_t i = 0; i < n; ++i) b.labels.push_back(draw(i, c.num_labels));
      break;
    case Task::QuestionAnswering:
      for (int i = 0; i < B; ++i) {
        const int32_t start = draw(static_cast<size_t>(i), T);
        b.start_positions.push_back(start);
        b.end_positions.push_back(std::min(T - 1, start + draw(static_cast<size_t>(B + i), 8)));
      }
      break;
    case Task::CausalLM: b.labels = b.input_ids; break;
    case Task::Seq2SeqLM:  // targets as long as the inputs
      b.Td = T;
      b.labels = b.input_ids;
      break;
    case Task::MaskedLM:
    case Task::PreTraining:
      // 15% of the positions masked, as the data collator does.
      for (size_t i = 0; i < n; ++i) b.labels.push_back(draw(i, 100) < 15 ? b.input_ids[i] : -100);
      if (c.task == Task::PreTraining)
        for (int i = 0; i < B; ++i) b.sentence_order_label.push_back(draw(n + static_cast<size_t>(i), 2));
      break;
    case Task::Base: fail("strata: profiling a training step needs a model with a task head (", c.model_type, ")");
  }
  check_batch(c, b, "the profile's synthetic batch");
  return b;
}

// What a tensor-parallel rank would all-reduce, counted into the part of the model now running.
struct CommCount {
  double bytes = 0, calls = 0;
};

nn::TensorGroup<float> counting_group(int tp, CommCount** now) {
  nn::TensorGroup<float> g;
  g.degree = tp;
  g.rank = 0;
  auto count = [now](size_t n, size_t bytes_per_value) {
    (*now)->bytes += static_cast<double>(n * bytes_per_value);
    (*now)->calls += 1;
  };
  g.all_reduce_sum = [count](float*, size_t n) { count(n, sizeof(float)); };
  g.all_reduce_max = [count](float*, size_t n) { count(n, sizeof(float)); };
  g.all_reduce_sum_f64 = [count](double*, size_t n) { count(n, sizeof(double)); };
  return g;
}

}  // namespace

double UnitProfile::layer_units_s() const {
  double s = 0;
  for (const UnitWork& u : units) s += u.forward_s + u.backward_s;
  return s;
}

double UnitProfile::step_compute_s() const {
  double owned = 0;
  for (const UnitWork& u : units) owned += u.owned_values;
  return layer_units_s() + owned * optimizer_s_per_value;
}

nlohmann::json UnitProfile::to_json() const {
  nlohmann::json us = nlohmann::json::array(), sh = nlohmann::json::array();
  for (const UnitWork& u : units)
    us.push_back({{"forward_s", u.forward_s}, {"backward_s", u.backward_s}, {"tp_bytes", u.tp_bytes},
                  {"tp_calls", u.tp_calls}, {"owned_values", u.owned_values}, {"forward_ops", u.forward_ops},
                  {"backward_ops", u.backward_ops}});
  for (const Shared& s : shared) sh.push_back({{"bytes", s.bytes}, {"units", s.units}});
  return {{"B", B}, {"T", T}, {"tp", tp}, {"threads", threads}, {"units", us},
          {"optimizer_s_per_value", optimizer_s_per_value}, {"boundary_bytes", boundary_bytes}, {"shared", sh}};
}

UnitProfile UnitProfile::from_json(const nlohmann::json& j) {
  UnitProfile p;
  p.B = j.at("B");
  p.T = j.at("T");
  p.tp = j.at("tp");
  p.threads = j.at("threads");
  for (const auto& u : j.at("units"))
    p.units.push_back({u.at("forward_s"), u.at("backward_s"), u.at("tp_bytes"), u.at("tp_calls"), u.at("owned_values"),
                       u.value("forward_ops", 0.0), u.value("backward_ops", 0.0)});  // profiles kept before ops were counted: 0
  p.optimizer_s_per_value = j.at("optimizer_s_per_value");
  p.boundary_bytes = j.at("boundary_bytes");
  for (const auto& s : j.at("shared")) p.shared.push_back({s.at("bytes"), s.at("units").get<std::vector<int>>()});
  return p;
}

UnitProfile profile_units(ModelConfig cfg, int B, int T, int tp, int threads, int repeats) {
  if (B <= 0 || T <= 0 || tp <= 0 || threads <= 0 || repeats <= 0)
    fail("strata: a unit profile needs a positive batch, sequence length, tensor-parallel degree, threads and repeats");
  kernels::set_num_threads(threads);
  T = std::min(T, max_sequence_length(cfg));
  cfg.tensor_split = {tp, 0};
  const std::unique_ptr<Model<float>> model = make_model<float>(cfg);
  model->init_weights(42);
  CommCount embeddings_comm, blocks_comm, head_comm, *now = nullptr;
  if (tp > 1) model->set_tensor_group(counting_group(tp, &now));
  const Batch b = synthetic_batch(cfg, B, T);
  const int L = model->num_blocks(), U = model->num_units();
  const UnitRange embeddings{0, 1}, blocks{1, L + 1}, head{L + 1, L + 2};
  const auto s_embeddings = model->new_state(), s_blocks = model->new_state(), s_head = model->new_state();
  OptimizerConfig oc;
  oc.weight_decay = 0.01;
  Optimizer<float> opt(oc, model->table());

  // Per part: forward and backward seconds of every timed step; the op calls between the
  // marks (every step makes the same).
  std::vector<double> fwd[3], bwd[3], optimizer;
  uint64_t ops[7] = {};
  for (int step = 0; step <= repeats; ++step) {
    const nn::DropoutCtx drop{true, mix64(static_cast<uint64_t>(step))};
    model->grads().zero();
    // The collectives of one step are counted (every step makes the same).
    CommCount discard;
    auto count_into = [&](CommCount* part) { now = step == 1 ? part : &discard; };
    const auto t0 = after_queued_work();
    ops[0] = kernels::op_calls();
    count_into(&embeddings_comm);
    const float* x0 = model->forward(b, drop, embeddings, nullptr, *s_embeddings);
    const auto t1 = after_queued_work();
    ops[1] = kernels::op_calls();
    count_into(&blocks_comm);
    const float* xL = model->forward(b, drop, blocks, x0, *s_blocks);
    const auto t2 = after_queued_work();
    ops[2] = kernels::op_calls();
    count_into(&head_comm);
    model->forward(b, drop, head, xL, *s_head);
    model->loss(b, *s_head);
    const auto t3 = after_queued_work();
    ops[3] = kernels::op_calls();
    const float* d_xL = model->backward(b, drop, head, nullptr, *s_head);
    const auto t4 = after_queued_work();
    ops[4] = kernels::op_calls();
    count_into(&blocks_comm);
    const float* d_x0 = model->backward(b, drop, blocks, d_xL, *s_blocks);
    const auto t5 = after_queued_work();
    ops[5] = kernels::op_calls();
    count_into(&embeddings_comm);
    model->backward(b, drop, embeddings, d_x0, *s_embeddings);
    const auto t6 = after_queued_work();
    ops[6] = kernels::op_calls();
    opt.step(model->params().data(), model->grads().data(), 1e-5);
    const auto t7 = after_queued_work();
    if (step == 0) continue;  // warm-up: first touch of every buffer
    auto s = [](Clock::time_point a, Clock::time_point z) { return std::chrono::duration<double>(z - a).count(); };
    fwd[0].push_back(s(t0, t1));
    fwd[1].push_back(s(t1, t2));
    fwd[2].push_back(s(t2, t3));
    bwd[2].push_back(s(t3, t4));
    bwd[1].push_back(s(t4, t5));
    bwd[0].push_back(s(t5, t6));
    optimizer.push_back(s(t6, t7));
  }

  UnitProfile p;
  p.B = B;
  p.T = T;
  p.tp = tp;
  p.threads = threads;
  p.units.resize(static_cast<size_t>(U));
  auto between = [&](int a, int z) { return static_cast<double>(ops[z] - ops[a]); };
  p.units[0] = {median(fwd[0]), median(bwd[0]), embeddings_comm.bytes, embeddings_comm.calls, 0, between(0, 1),
                between(5, 6)};
  for (int u = 1; u <= L; ++u)
    p.units[static_cast<size_t>(u)] = {median(fwd[1]) / L, median(bwd[1]) / L, blocks_comm.bytes / L,
                                       blocks_comm.calls / L, 0, between(1, 2) / L, between(4, 5) / L};
  p.units[static_cast<size_t>(U - 1)] = {median(fwd[2]), median(bwd[2]), head_comm.bytes, head_comm.calls, 0,
                                         between(2, 3), between(3, 4)};
  p.optimizer_s_per_value = median(optimizer) / static_cast<double>(model->table().total());
  for (int u = 0; u < U - 1; ++u) {  // targets as long as sources, as the synthetic batch has them
    const double bytes = static_cast<double>(model->boundary_values(B, T, T, u) * sizeof(float));
    p.boundary_bytes = std::max(p.boundary_bytes, bytes);
  }
  // Ownership and sharing, as pipeline stages see it (train/pipeline_stages.h): the first unit
  // that reads a parameter owns it.
  std::map<size_t, std::vector<int>> readers;
  for (int u = 0; u < U; ++u)
    for (size_t e : model->unit_parameters(u)) {
      std::vector<int>& r = readers[e];
      if (r.empty()) p.units[static_cast<size_t>(u)].owned_values += static_cast<double>(model->table().entries()[e].numel);
      if (r.empty() || r.back() != u) r.push_back(u);
    }
  for (const auto& [e, units] : readers)
    if (units.size() > 1)
      p.shared.push_back({static_cast<double>(model->table().entries()[e].numel * sizeof(float)), units});
  return p;
}

}  // namespace strata
