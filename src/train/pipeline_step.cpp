#include "train/pipeline_step.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include <omp.h>

#include "kernels/ops.h"
#include "kernels/device.h"
#include "train/micro_batches.h"
#include "util/error.h"

namespace strata {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Message tags on the pipeline group. Messages between two ranks on one tag arrive in order,
// so a tag need only tell apart the messages in flight at once: micro-batch j's activation
// (2j) and gradient (2j + 1), the shared parameters' gradients and values.
constexpr int kMicroTags = 8192;
int activation_tag(int j) { return 2 * (j % kMicroTags); }
int gradient_tag(int j) { return 2 * (j % kMicroTags) + 1; }
constexpr int kSharedGradientTag = 2 * kMicroTags;
constexpr int kSharedParameterTag = 2 * kMicroTags + 1;
constexpr int kGatherTag = 2 * kMicroTags + 2;

}  // namespace

// One micro-batch in flight: its saved state, the activation and gradient it receives, and
// the messages it has on the way.
struct PipelineStep::Slot {
  std::unique_ptr<ModelState> state;
  Buffer<float> act_in, grad_in;
  std::unique_ptr<dist::Request> recv_act, recv_grad, send_act, send_grad;
};

PipelineStep::PipelineStep(Model<float>& model, const PipelineStages& stages, dist::Communicator* pipeline,
                           dist::PipelineKind kind, int micro_batches, bool head_only,
                           const nn::ActivationPolicy& activations, int replicas)
    : model_(model),
      layout_(stages),
      comm_(pipeline && pipeline->size() > 1 ? pipeline : nullptr),
      kind_(kind),
      micro_(micro_batches),
      head_only_(head_only),
      activations_(activations),
      stage_(comm_ ? comm_->rank() : 0),
      replicas_(replicas) {
  STRATA_CHECK(stages.count() == (comm_ ? comm_->size() : 1), "the pipeline has ", stages.count(),
               " stages but its group ", comm_ ? comm_->size() : 1, " ranks");
  STRATA_CHECK(micro_batches >= 1, "microbatches must be at least 1, got ", micro_batches);
  STRATA_CHECK(replicas >= 1, "replica threads must be at least 1, got ", replicas);
  STRATA_CHECK(replicas == 1 || (stages.count() == 1 && micro_batches == 1),
               "replica threads need one pipeline stage and one micro-batch per batch");
}

PipelineStep::~PipelineStep() = default;

PipelineStep::Slot& PipelineStep::slot(size_t i) {
  if (slots_.size() <= i) slots_.resize(i + 1);
  if (!slots_[i]) {
    slots_[i] = std::make_unique<Slot>();
    slots_[i]->state = model_.new_state(activations_);
  }
  return *slots_[i];
}

PipelineStep::Slot& PipelineStep::slot_of(int micro) {
  // Micro-batch j reuses the slot of j - n, whose backward the schedule has run by then.
  const int n = std::max(1, dist::max_in_flight(kind_, stages(), stage_, micro_));
  return slot(static_cast<size_t>(micro % n));
}

void PipelineStep::wait(std::unique_ptr<dist::Request>& r, double& idle) {
  if (!r) return;
  const auto t0 = Clock::now();
  r->wait();
  idle += seconds_since(t0);
  r.reset();
}

void PipelineStep::post_activation_recv(const std::vector<Batch>& micro, int j) {
  if (is_first() || j >= static_cast<int>(micro.size()) || micro[j].B == 0) return;
  Slot& s = slot_of(j);
  s.act_in.resize(input_values(micro[j]));
  s.recv_act = comm_->irecv(s.act_in.data(), s.act_in.size() * sizeof(float), stage_ - 1, activation_tag(j));
}

void PipelineStep::post_gradient_recv(const std::vector<Batch>& micro, int j) {
  if (is_last() || head_only_ || micro[j].B == 0) return;
  Slot& s = slot_of(j);
  s.grad_in.resize(output_values(micro[j]));
  s.recv_grad = comm_->irecv(s.grad_in.data(), s.grad_in.size() * sizeof(float), stage_ + 1, gradient_tag(j));
}

void PipelineStep::zero_borrowed_grads() {
  float* g = model_.grads().data();
  for (size_t e : layout_.borrowed(stage_)) {
    const ParamEntry& p = model_.table().entries()[e];
    kernels::back_memory(g + p.offset, p.numel * sizeof(float));
    kernels::fill(g + p.offset, p.numel, 0.0f);
  }
}

double PipelineStep::run(const Batch& batch, int first, int total, double norm,
                         const std::function<nn::DropoutCtx(int)>& dropout, DataParallelStep& dp) {
  if (replicas_ > 1) return run_replicas(batch, first, total, norm, dropout, dp);
  const auto t0 = Clock::now();
  double reduce_s = 0;  // the data-parallel step's waits: not part of the schedule
  const std::vector<Batch> micro = split_rows(batch, micro_);
  const int m = static_cast<int>(micro.size());
  const bool final_batch = first + m == total;
  const bool exchange_shared = final_batch && comm_ && !head_only_;
  const UnitRange units = layout_.units(stage_);
  const UnitRange backward_units = head_only_ ? UnitRange{model_.head_unit(), model_.num_units()} : units;
  const bool runs_backward = !head_only_ || is_last();
  if (exchange_shared) post_shared_gradient_recvs();
  // Activation receives are posted as far ahead as slots allow; gradient receives once the
  // micro-batch's forward has run.
  const int slots = std::max(1, dist::max_in_flight(kind_, stages(), stage_, m));
  for (int j = 0; j < std::min(m, slots); ++j) post_activation_recv(micro, j);

  double loss = 0;
  for (const dist::PipeOp& op : dist::pipeline_schedule(kind_, stages(), stage_, m)) {
    const int j = op.micro, k = first + j;
    const Batch& b = micro[static_cast<size_t>(j)];
    Slot& s = slot_of(j);
    if (op.kind == dist::PipeOp::Forward) {
      // The slot's previous micro-batch may still be sending what it computed.
      wait(s.send_act, idle_s_);
      wait(s.send_grad, idle_s_);
      const float* out = nullptr;
      if (b.B > 0) {
        wait(s.recv_act, idle_s_);
        out = model_.forward(b, dropout(k), units, is_first() ? nullptr : s.act_in.data(), *s.state);
      }
      post_activation_recv(micro, j + slots);  // into the buffer forward has just read
      if (b.B == 0) continue;  // an empty share of a short last batch: no messages either
      if (is_last()) {
        loss += model_.loss(b, *s.state, norm).loss;
      } else {
        s.send_act = comm_->isend(out, output_values(b) * sizeof(float), stage_ + 1, activation_tag(j));
        if (runs_backward) post_gradient_recv(micro, j);
      }
      continue;
    }
    if (!runs_backward) continue;
    if (k == total - 1 && exchange_shared) add_shared_gradients();
    dp.begin_micro(k, total);
    if (b.B > 0) {
      wait(s.recv_grad, idle_s_);
      const float* d_in = model_.backward(b, dropout(k), backward_units, is_last() ? nullptr : s.grad_in.data(),
                                          *s.state, dp.hook(k, total));
      if (!is_first() && !head_only_)
        s.send_grad = comm_->isend(d_in, input_values(b) * sizeof(float), stage_ - 1, gradient_tag(j));
    }
    if (k == total - 1 && exchange_shared) send_shared_gradients();
    const auto r0 = Clock::now();
    dp.end_micro(k, total);
    reduce_s += seconds_since(r0);
  }
  if (head_only_ && !is_last())  // no backward here: the data-parallel step still reduces
    for (int j = 0; j < m; ++j) {
      dp.begin_micro(first + j, total);
      dp.end_micro(first + j, total);
    }
  // The step's end: every stage waits (asleep) for the others, so that the collectives that
  // follow find them all there; on a host whose cores the ranks share, ranks spinning in those
  // would slow the stages still computing.
  if (final_batch) settle(idle_s_);
  schedule_s_ += seconds_since(t0) - reduce_s;
  return loss;
}

double PipelineStep::run_replicas(const Batch& batch, int first, int total, double norm,
                                  const std::function<nn::DropoutCtx(int)>& dropout, DataParallelStep& dp) {
  const auto t0 = Clock::now();
  const std::vector<Batch> parts = split_rows(batch, replicas_);
  const int R = replicas_;
  const size_t n = model_.grads().size();
  replica_grads_.resize(static_cast<size_t>(R - 1));
  for (int r = 0; r < R; ++r) {  // states and buffers before the threads: nothing shared grows in them
    ModelState& state = *slot(static_cast<size_t>(r)).state;
    if (r > 0) replica_grads_[r - 1].resize(n);
    state.own_gradients = r > 0 ? replica_grads_[r - 1].data() : nullptr;
  }
  const UnitRange units = model_.all_units();
  const UnitRange backward_units = head_only_ ? UnitRange{model_.head_unit(), model_.num_units()} : units;
  std::vector<double> losses(static_cast<size_t>(R), 0.0);
  // An exception may not leave a parallel region: each thread keeps its own, the first is
  // rethrown after (a bad batch stops the run with its message, as without replicas).
  std::vector<std::exception_ptr> errors(static_cast<size_t>(R));
  // One thread per part; the kernels' own parallel regions inside run on that thread alone
  // (kernels::set_num_threads turns nesting off), and so does every matrix product.
#pragma omp parallel num_threads(R)
  {
    const int r = omp_get_thread_num();
    try {
      const Batch& b = parts[static_cast<size_t>(r)];
      if (r > 0) kernels::fill(replica_grads_[r - 1].data(), n, 0.0f);
      if (b.B > 0) {
        ModelState& state = *slots_[static_cast<size_t>(r)]->state;
        const nn::DropoutCtx drop = dropout(first * R + r);
        model_.forward(b, drop, units, nullptr, state);
        losses[static_cast<size_t>(r)] = model_.loss(b, state, norm).loss;
        model_.backward(b, drop, backward_units, nullptr, state);
      }
    } catch (...) {
      errors[static_cast<size_t>(r)] = std::current_exception();
    }
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  float* g = model_.grads().data();
  for (int r = 1; r < R; ++r)
    if (parts[static_cast<size_t>(r)].B > 0) kernels::add(g, replica_grads_[r - 1].data(), g, n);
  schedule_s_ += seconds_since(t0);
  // The data-parallel step sees one micro-batch whose gradients are all final at once.
  dp.begin_micro(first, total);
  if (const GradsFinalHook hook = dp.hook(first, total)) hook(0);
  dp.end_micro(first, total);
  double loss = 0;
  for (double l : losses) loss += l;
  return loss;
}

void PipelineStep::settle(double& idle) {
  for (auto& s : slots_)
    if (s) {
      wait(s->send_act, idle);
      wait(s->send_grad, idle);
    }
  for (auto& r : shared_sends_) wait(r, idle);
  shared_sends_.clear();
  if (!comm_) return;
  const auto t0 = Clock::now();
  comm_->quiet_barrier("pipeline stages done");
  idle += seconds_since(t0);
}

void PipelineStep::post_shared_gradient_recvs() {
  shared_in_.clear();
  shared_recvs_.clear();
  for (const PipelineStages::Shared& sh : layout_.shared()) {
    if (sh.owner != stage_) continue;
    const ParamEntry& p = model_.table().entries()[sh.entry];
    for (int from : sh.borrowers) {
      shared_in_.emplace_back(p.numel);
      shared_recvs_.push_back(comm_->irecv(shared_in_.back().data(), p.numel * sizeof(float), from, kSharedGradientTag));
    }
  }
}

void PipelineStep::add_shared_gradients() {
  size_t k = 0;
  for (const PipelineStages::Shared& sh : layout_.shared()) {
    if (sh.owner != stage_) continue;
    const ParamEntry& p = model_.table().entries()[sh.entry];
    float* g = model_.grads().data() + p.offset;
    for (size_t b = 0; b < sh.borrowers.size(); ++b, ++k) {
      wait(shared_recvs_[k], idle_s_);
      kernels::add(g, shared_in_[k].data(), g, p.numel);
      // Received once per step: its pages go back to the OS until the next.
      kernels::zero_and_release(shared_in_[k].data(), p.numel * sizeof(float));
    }
  }
}

void PipelineStep::send_shared_gradients() {
  const float* g = model_.grads().data();
  for (const PipelineStages::Shared& sh : layout_.shared()) {
    if (std::find(sh.borrowers.begin(), sh.borrowers.end(), stage_) == sh.borrowers.end()) continue;
    const ParamEntry& p = model_.table().entries()[sh.entry];
    shared_sends_.push_back(comm_->isend(g + p.offset, p.numel * sizeof(float), sh.owner, kSharedGradientTag));
  }
}

void PipelineStep::refresh_borrowed_parameters() {
  if (!comm_) return;
  float* params = model_.params().data();
  std::vector<std::unique_ptr<dist::Request>> pending;
  for (const PipelineStages::Shared& sh : layout_.shared()) {
    const ParamEntry& p = model_.table().entries()[sh.entry];
    const size_t bytes = p.numel * sizeof(float);
    if (sh.owner == stage_) {
      for (int to : sh.borrowers) pending.push_back(comm_->isend(params + p.offset, bytes, to, kSharedParameterTag));
    } else if (std::find(sh.borrowers.begin(), sh.borrowers.end(), stage_) != sh.borrowers.end()) {
      pending.push_back(comm_->irecv(params + p.offset, bytes, sh.owner, kSharedParameterTag));
    }
  }
  for (auto& r : pending) r->wait();
}

ModelState* PipelineStep::infer(const Batch& b) {
  if (stages() == 1) {  // the inference forward: no saved state beyond a block at a time
    ModelState& state = *slot(0).state;
    model_.infer(b, state);
    return &state;
  }
  // Two states in turn: batch n+1 is computed while batch n's output is still being sent.
  Slot& s = slot(static_cast<size_t>(infer_count_++ % 2));
  double idle = 0;  // evaluation is not part of the training bubble
  wait(s.send_act, idle);
  if (b.B == 0) return is_last() ? s.state.get() : nullptr;
  if (!is_first()) {
    s.act_in.resize(input_values(b));
    s.recv_act = comm_->irecv(s.act_in.data(), s.act_in.size() * sizeof(float), stage_ - 1, activation_tag(0));
    wait(s.recv_act, idle);
  }
  const float* out = model_.forward(b, nn::DropoutCtx{false, 0}, layout_.units(stage_),
                                    is_first() ? nullptr : s.act_in.data(), *s.state);
  if (is_last()) return s.state.get();
  s.send_act = comm_->isend(out, output_values(b) * sizeof(float), stage_ + 1, activation_tag(0));
  return nullptr;
}

void PipelineStep::finish_infer() {
  double idle = 0;  // evaluation is not part of the training bubble
  settle(idle);
}

EntryFilter PipelineStep::keeps() const { return layout_.keeps(model_.table(), stage_); }

void PipelineStep::release_other_stages() {
  if (stages() == 1) return;
  // The entries not kept, run by run (the table lists them in flat-buffer order, end to end).
  const EntryFilter kept = keeps();
  const auto& entries = model_.table().entries();
  for (size_t e = 0; e < entries.size();) {
    if (kept(e)) {
      ++e;
      continue;
    }
    const size_t from = entries[e].offset;
    while (e < entries.size() && !kept(e)) ++e;
    const size_t to = e < entries.size() ? entries[e].offset : model_.table().total();
    kernels::zero_and_release(model_.params().data() + from, (to - from) * sizeof(float));
    kernels::zero_and_release(model_.grads().data() + from, (to - from) * sizeof(float));
  }
}

size_t PipelineStep::offload_pool_bytes() const {
  size_t bytes = 0;
  for (const auto& s : slots_)
    if (s) bytes += s->state->offload_pool_bytes();
  return bytes;
}

size_t PipelineStep::borrowed_gradient_bytes() const {
  size_t bytes = 0;
  for (size_t e : layout_.borrowed(stage_)) {
    const ParamEntry& p = model_.table().entries()[e];
    bytes += kernels::resident_bytes(model_.grads().data() + p.offset, p.numel * sizeof(float));
  }
  return bytes;
}

void PipelineStep::gather_parameters_to_first() {
  if (!comm_) return;
  float* params = model_.params().data();
  if (!is_first()) {
    comm_->send(params + layout_.begin(stage_), (layout_.end(stage_) - layout_.begin(stage_)) * sizeof(float), 0,
                kGatherTag);
    return;
  }
  for (int s = 1; s < stages(); ++s) {
    const size_t values = layout_.end(s) - layout_.begin(s);
    kernels::back_memory(params + layout_.begin(s), values * sizeof(float));  // a collective may write it directly
    comm_->recv(params + layout_.begin(s), values * sizeof(float), s, kGatherTag);
  }
}

}  // namespace strata
