#include "train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>

#include "core/exit_status.h"
#include "io/files.h"
#include "io/python_json.h"
#include "kernels/device.h"
#include "kernels/ops.h"
#include "models/batch_checks.h"
#include "models/pretrained.h"
#include "tensor/resident_memory.h"
#include "train/memory_plan.h"
#include "train/optimizer_files.h"
#include "train/pipeline_partition.h"
#include "train/progress.h"
#include "train/scheduler.h"
#include "train/tensor_parallel.h"
#include "util/console.h"
#include "util/error.h"
#include "util/rng.h"
#include "util/signal_flag.h"

namespace strata {

namespace fs = std::filesystem;

namespace {

// The dropout seed of one micro-batch: a function of (seed, step, micro-batch) only.
uint64_t dropout_seed(uint64_t seed, int64_t step, int micro) {
  return mix64(seed ^ mix64(static_cast<uint64_t>(step) * 1024 + static_cast<uint64_t>(micro) + 1));
}

double round_sig(double v) { return std::round(v * 1e4) / 1e4; }

std::string checkpoint_dir(const std::string& output_dir, int64_t step) {
  return (fs::path(output_dir) / ("checkpoint-" + std::to_string(step))).string();
}

dist::Communicator* group_or_null(dist::Communicator* c) { return c && c->size() > 1 ? c : nullptr; }

// Replica threads (train/pipeline_step.h): replica_threads if set, else (auto) one per compute
// thread, where they apply: one pipeline stage without tensor parallelism or micro-batches, not
// under ZeRO-2 (whose point is not to hold whole gradient buffers) or full_determinism (whose
// bits may not depend on the thread count); at most one per row of the batch, and no more than
// kReplicaGradientBudget of extra gradient buffers: a small model, up to 32M parameters for two
// replicas. DistilBERT-base's 66M would take 253 MiB more, BERT-base's 110M 420 MiB, and their
// products keep two threads busy without replicas.
constexpr size_t kReplicaGradientBudget = size_t{128} << 20;
// On a GPU one replica: the GPU runs a whole batch's rows at once already.
int replica_threads(const TrainingArguments& a, const Model<float>& model, bool one_stage, bool unsplit, int dp) {
  if (kernels::on_cuda()) {
    if (a.replica_threads > 1)
      fail("replica_threads: ", a.replica_threads, " replica threads share the CPU's cores; on a GPU a batch's rows "
           "run at once already. Set replica_threads: 0 (or 1), or use_cpu: true");
    return 1;
  }
  if (a.replica_threads > 0) return a.replica_threads;
  if (!one_stage || !unsplit || a.microbatches > 1 || (dp > 1 && a.sharding_stage() == 2) || a.full_determinism)
    return 1;
  const size_t buffer = std::max<size_t>(1, model.table().total() * sizeof(float));
  const size_t affordable = 1 + kReplicaGradientBudget / buffer;
  const size_t threads = static_cast<size_t>(kernels::num_threads());
  return static_cast<int>(std::max<size_t>(
      1, std::min({threads, affordable, static_cast<size_t>(std::max(1, a.per_device_train_batch_size))})));
}

// Trainer::pause_after_step: waits until `stop_request` has counted a signal, at most
// kPauseSeconds; rank 0 (`say`) says so first, in the line the job runner waits for.
void wait_for_stop_request(const SignalFlag& stop_request, int64_t step, bool say) {
  if (say) progress_message(cat(kPausedLine, step, "; waiting up to ", kPauseSeconds, " s for the stop request (",
                                kPauseAtStepVariable, ")"));
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(kPauseSeconds);
  while (stop_request.count() == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (say && stop_request.count() == 0) progress_message(cat("no stop request came; training goes on after step ", step));
}

}  // namespace

Trainer::Trainer(TrainingArguments args, std::unique_ptr<Model<float>> model, std::string tokenizer_dir,
                 TrainerGroups groups)
    : args_(std::move(args)),
      precision_(mixed_precision(args_)),
      scaler_(precision_.loss_scaling(), args_.fp16_init_scale, args_.fp16_growth_interval),
      world_(group_or_null(groups.world)),
      comm_(group_or_null(groups.data)),
      pipeline_(group_or_null(groups.pipeline)),
      tensor_(group_or_null(groups.tensor)),
      ranks_on_machine_(std::max(groups.ranks_on_machine, 1)),
      model_(std::move(model)),
      tokenizer_dir_(std::move(tokenizer_dir)) {
  const int stages = pipeline_ ? pipeline_->size() : 1;
  std::string how;
  stages_ = std::make_unique<PipelineStages>(
      *model_, partition_blocks(*model_, args_, stages, args_.model_name_or_path + "/config.json", &how));
  pipe_ = std::make_unique<PipelineStep>(
      *model_, *stages_, pipeline_, dist::parse_pipeline_kind(args_.pipeline), args_.microbatches,
      args_.freeze_base_model, activation_policy(args_),
      replica_threads(args_, *model_, stages == 1, tensor_ == nullptr, comm_ ? comm_->size() : 1));
  const int s = pipe_->stage();
  STRATA_CHECK((tensor_ ? tensor_->size() : 1) == model_->tensor_split().degree, "the model is split ",
               model_->tensor_split().degree, " ways, the tensor-parallel group has ", tensor_ ? tensor_->size() : 1,
               " ranks");
  dp_ = std::make_unique<DataParallelStep>(comm_, *model_, stages_->begin(s), stages_->end(s), args_.sharding_stage(),
                                           args_.ddp_bucket_cap_mb, tensor_);
  pipe_->release_other_stages();
  if (is_main_process() && stages > 1) progress_message(cat(stages_->describe(model_->table()), "  partition: ", how));
  OptimizerConfig oc;
  oc.name = args_.optim == "sgd" ? "sgd" : "adamw";
  oc.lr = args_.learning_rate;
  oc.weight_decay = args_.weight_decay;
  oc.beta1 = args_.adam_beta1;
  oc.beta2 = args_.adam_beta2;
  oc.eps = args_.adam_epsilon;
  oc.momentum = args_.sgd_momentum;
  oc.exclude_bias_and_norm_from_decay = true;  // HF Trainer's parameter groups
  optimizer_ = std::make_unique<Optimizer<float>>(oc, model_->table(), dp_->owned_begin(), dp_->owned_end());
  if (args_.freeze_base_model) {
    std::vector<bool> frozen;
    for (const ParamEntry& e : model_->table().entries()) frozen.push_back(model_->is_base_parameter(e));
    optimizer_->set_frozen(std::move(frozen));
  }
  state_.seed = static_cast<uint64_t>(args_.seed);
  state_.data_seed = static_cast<uint64_t>(args_.data_seed >= 0 ? args_.data_seed : args_.seed);
}

std::string Trainer::log_path() const {
  return (fs::path(args_.logging_dir.empty() ? args_.output_dir : args_.logging_dir) / "trainer_log.jsonl").string();
}

double Trainer::all_sum(double v, const char* what) {
  if (comm_ && comm_->size() > 1) comm_->all_reduce_sum(&v, 1, what);
  return v;
}

void Trainer::notify(TrainerEvent event, const nlohmann::json& payload) {
  if (callback_) callback_->on_event(event, state_, payload, control_);
}

void Trainer::log(nlohmann::json entry) {
  entry["step"] = state_.global_step;
  if (!entry.contains("epoch")) entry["epoch"] = round_sig(state_.epoch_float);
  if (args_.include_num_input_tokens_seen) entry["num_input_tokens_seen"] = state_.num_input_tokens_seen;
  state_.log_history.push_back(entry);  // every rank keeps it: any rank's state can resume
  if (is_main_process()) {
    io::append_to_file(log_path(), entry.dump() + "\n");
    if (!reporters_) reporters_ = make_log_reporters(args_, fs::path(log_path()).parent_path().string());
    for (const auto& r : *reporters_) r->log(entry, state_.log_history);
    progress_message(entry.dump());
  }
  notify(TrainerEvent::Log, entry);
}

std::string Trainer::resolve_checkpoint(const std::string& spec) const {
  if (spec != "latest") {
    if (!fs::exists(fs::path(spec) / "trainer_state.json"))
      fail("resume_from_checkpoint: '", spec, "' is not a checkpoint directory (no trainer_state.json)");
    return spec;
  }
  const auto all = list_checkpoints(args_.output_dir);
  if (all.empty()) fail("resume_from_checkpoint: latest: no checkpoint-<step> directory in ", args_.output_dir);
  return all.back();
}

void Trainer::resume_from(const std::string& dir) {
  load_weights(*model_, dir, pipe_->keeps());
  state_ = load_checkpoint_state(dir, *model_, *optimizer_);
  // A checkpoint of an fp16 run carries its loss scale; one from a bf16 or fp32 run starts
  // fp16 at the initial scale (its skipped steps still count).
  if (scaler_.enabled() && state_.loss_scaler) scaler_.restore(*state_.loss_scaler);
  const uint64_t data_seed = static_cast<uint64_t>(args_.data_seed >= 0 ? args_.data_seed : args_.seed);
  if (state_.seed != static_cast<uint64_t>(args_.seed) || state_.data_seed != data_seed)
    fail(dir, ": the checkpoint was trained with seed ", state_.seed, " and data_seed ", state_.data_seed,
         ", this run has ", args_.seed, " and ", data_seed, "; resuming would not reproduce the run");
  // HF's ignore_data_skip: continue at the start of the checkpoint's epoch instead of replaying
  // the data order up to its batch.
  if (args_.ignore_data_skip) state_.batch_in_epoch = 0;
  if (!is_main_process()) return;
  // The log on disk may run past the checkpoint (the run was interrupted later): rewrite it.
  std::string text;
  for (const auto& e : state_.log_history) text += e.dump() + "\n";
  io::write_file_atomic(log_path(), text);
  progress_message(cat("resumed from ", dir, " at step ", state_.global_step, " (epoch ", state_.epoch, ", batch ",
                       state_.batch_in_epoch, ")"));
}

// One train() call's loop: its length and schedule, what it reads and counts between steps.
struct Trainer::TrainRun {
  TrainRun(const TrainingArguments& a, int64_t batches_)
      : batches(batches_),
        // A last partial accumulation at the end of an epoch still makes an optimizer step.
        steps_per_epoch((batches + a.gradient_accumulation_steps - 1) / a.gradient_accumulation_steps),
        max_steps(a.max_steps > 0 ? a.max_steps : static_cast<int64_t>(std::ceil(a.num_train_epochs * steps_per_epoch))),
        sched(a.lr_scheduler_type, a.learning_rate, warmup_steps_from(a.warmup_ratio, a.warmup_steps, max_steps),
              max_steps),
        accumulated(a.gradient_accumulation_steps) {}

  // Before the first step: the progress bar, the clock, and the stop signals caught from here on.
  void start(int64_t global_step, bool quiet) {
    bar.emplace(max_steps, quiet);
    bar->update(global_step, "");
    t0 = std::chrono::steady_clock::now();
    start_step = global_step;
    // A stop request: SIGTERM (Slurm, a spot reclaim, kill) or SIGUSR1 (as mpirun forwards a
    // stop to every rank). More of them change nothing: under Slurm a rank can get both, and the
    // second must not cost the checkpoint. A rank stuck past its grace period is killed.
    stop_request.emplace(std::initializer_list<int>{SIGTERM, SIGUSR1});
  }

  const int64_t batches, steps_per_epoch, max_steps;
  const LRScheduler sched;
  std::vector<Batch> accumulated;  // one batch per accumulation step
  std::optional<Progress> bar;
  std::optional<SignalFlag> stop_request;
  std::chrono::steady_clock::time_point t0;
  int64_t start_step = 0, tokens = 0;
  bool started = false, stop = false;
};

// What one optimizer step leaves for the logging, evaluation and stopping after it.
struct Trainer::StepResult {
  double loss, grad_norm;
  bool epoch_end;
};

nlohmann::json Trainer::train(BatchStream& train_data, BatchStream* eval_data, const EvalTask* eval_task) {
  const int64_t batches = static_cast<int64_t>(train_data.num_batches());
  if (batches == 0) fail(args_.train_file, ": the training set has no batches");
  TrainRun run(args_, batches);
  begin_training(run, train_data.num_examples());
  const MatmulPrecisionScope products(precision_.train, precision_.path);
  kernels::warm_up_gemm();  // the library's generated code is held before training, not planned
  held_before_training_ = memory_outside_plan();
  check_memory_fits(eval_data ? EvalShape{args_.per_device_eval_batch_size, args_.sequence_length()} : EvalShape{});
  run.start(state_.global_step, args_.disable_tqdm || !is_main_process());
  control_ = {};
  notify(TrainerEvent::TrainBegin);
  while (state_.global_step < run.max_steps && !run.stop) {
    const StepResult step = train_step(run, train_data);
    after_step(run, step, eval_data, eval_task);
  }
  return finish_training(run);
}

void Trainer::begin_training(const TrainRun& run, size_t num_examples) {
  const TrainingArguments& a = args_;
  if (is_main_process()) fs::create_directories(fs::path(log_path()).parent_path());
  if (!a.resume_from_checkpoint.empty()) {
    resume_from(resolve_checkpoint(a.resume_from_checkpoint));
  } else if (is_main_process()) {
    io::write_file_atomic(log_path(), "");
  }
  state_.max_steps = run.max_steps;
  // As HF's Trainer fills its TrainerState at the start of training.
  state_.logging_steps = a.logging_steps;
  state_.eval_steps = a.eval_steps;
  state_.save_steps = a.save_steps;
  state_.train_batch_size = a.per_device_train_batch_size;
  state_.early_stopping_patience = a.early_stopping_patience;
  state_.early_stopping_threshold = a.early_stopping_threshold;
  state_.num_train_epochs = a.max_steps > 0 ? (run.max_steps + run.steps_per_epoch - 1) / run.steps_per_epoch
                                            : static_cast<int64_t>(std::ceil(a.num_train_epochs));
  const int64_t global_batch = static_cast<int64_t>(a.per_device_train_batch_size) * data_parallel_size();
  if (state_.global_batch_size != 0 && state_.global_batch_size != global_batch && state_.batch_in_epoch > 0) {
    // Saved with another number of ranks: the same examples have been read; continue after them.
    const int64_t examples = state_.batch_in_epoch * state_.global_batch_size;
    state_.batch_in_epoch = examples / global_batch;
    if (examples % global_batch && is_main_process())
      console_warning(cat("the checkpoint's position (", examples, " examples into epoch ", state_.epoch,
                           ") is not a multiple of the global batch ", global_batch, "; ", examples % global_batch,
                           " examples will be read again"));
  }
  state_.global_batch_size = global_batch;
  if (!is_main_process()) return;
  progress_message(cat("***** Running training *****\n  Run = ", a.run_name.empty() ? a.output_dir : a.run_name,
                       "\n  Num examples = ", num_examples,
                       "\n  Processes = ", world_ ? world_->size() : 1,
                       pipeline_ ? cat(" (", data_parallel_size(), " data parallel x ", pipe_->stages(), " pipeline stages, ",
                                       a.microbatches, " micro-batches per batch, ", a.pipeline, ")")
                                 : std::string(),
                       tensor_ ? cat(" (each layer split over ", tensor_->size(), " tensor-parallel ranks)") : std::string(),
                       pipe_->replicas() > 1 ? cat("\n  Replica threads = ", pipe_->replicas(),
                                                   " (each batch's rows in as many parts, trained at once)")
                                             : std::string(),
                       "\n  Num epochs = ", state_.num_train_epochs,
                       "\n  Batch size = ", a.per_device_train_batch_size, " x ", a.gradient_accumulation_steps,
                       " accumulation\n  Total optimization steps = ", run.max_steps, "\n  Trainable parameters = ",
                       model_->table().total()));
  if (precision_.any()) progress_message(cat("mixed precision: ", precision_.describe()));
}

Trainer::StepResult Trainer::train_step(TrainRun& run, BatchStream& train_data) {
  const TrainingArguments& a = args_;
  if (!run.started || state_.batch_in_epoch == 0) {
    train_data.start(state_.epoch, static_cast<size_t>(state_.batch_in_epoch));
    run.started = true;
  }
  std::vector<Batch>& accumulated = run.accumulated;
  int n = 0;
  while (n < a.gradient_accumulation_steps && train_data.next(accumulated[n])) ++n;
  if (n == 0) fail("training data ended early in epoch ", state_.epoch, " at batch ", state_.batch_in_epoch);
  for (int i = 0; i < n; ++i) {  // the largest batch shape: where the plan puts the peak
    largest_batch_.first = std::max(largest_batch_.first, accumulated[i].B);
    largest_batch_.second = std::max(largest_batch_.second, accumulated[i].T);
  }
  // The loss is normalised by the labels of the global batch (all batches of the
  // accumulation, all data-parallel ranks), so summing gradients over ranks gives the union
  // batch's gradient.
  double local_norm = 0;
  for (int i = 0; i < n; ++i) local_norm += label_count(model_->config(), accumulated[i]);
  const double norm = all_sum(local_norm, "global label count");
  // fp16: the loss's gradient is seeded scale times larger (the loss normalised by norm /
  // scale), and the loss divided back; both exact, the scale being a power of two.
  const double loss_scale = scaler_.scale();

  dp_->zero_grads();
  pipe_->zero_borrowed_grads();
  double loss = 0;
  // Each batch runs as a.microbatches micro-batches; micro-batch k of the step gets dropout
  // seed (seed, data-parallel rank, step, k): each rank's rows are different examples, and
  // every stage of a pipeline draws the same masks for the same micro-batch.
  const uint64_t rank_seed = state_.seed ^ mix64(comm_ ? comm_->rank() : 0);
  const int64_t step = state_.global_step;
  auto dropout = [&](int k) { return nn::DropoutCtx{true, dropout_seed(rank_seed, step, k)}; };
  int64_t step_tokens = 0;
  for (int i = 0; i < n; ++i) {
    loss += pipe_->run(accumulated[i], i * a.microbatches, n * a.microbatches, norm / loss_scale, dropout, *dp_) /
            loss_scale;
    step_tokens += static_cast<int64_t>(accumulated[i].B) * accumulated[i].T;
  }
  run.tokens += step_tokens;
  // Only the last stage computed the loss.
  if (pipeline_) pipeline_->all_reduce_sum(&loss, 1, "training loss from the last stage");
  double sums[2] = {loss, static_cast<double>(step_tokens)};  // one collective for both
  if (comm_) comm_->all_reduce_sum(sums, 2, "training loss and tokens");
  loss = sums[0];
  state_.num_input_tokens_seen += static_cast<int64_t>(sums[1]);
  state_.total_flos += 6.0 * sums[1] * static_cast<double>(model_->non_embedding_parameters());
  // fp16: an overflow shows as an inf / nan loss or gradient norm; the step is skipped and the
  // scale backs off (train/loss_scaler.h). Elsewhere a non-finite loss ends the run.
  const double grad_norm = dp_->clip(a.max_grad_norm, pipeline_, loss_scale);
  const bool finite = std::isfinite(loss) && std::isfinite(grad_norm);
  if (!finite && !scaler_.enabled()) {
    const auto saved = list_checkpoints(a.output_dir);
    fail("step ", state_.global_step + 1, ": the training loss is ", loss, " and the gradient norm ", grad_norm,
         "; stopping. ",
         saved.empty() ? std::string("No checkpoint was saved yet.")
                       : "The last good checkpoint is " + saved.back() + " (resume_from_checkpoint: latest).");
  }
  if (scaler_.step_ok(finite)) {
    // As accelerate: a skipped step does not advance the learning-rate schedule.
    dp_->update(*optimizer_, run.sched.lr_at(state_.global_step - scaler_.state().skipped_steps));
    pipe_->refresh_borrowed_parameters();
  } else if (!std::isfinite(loss)) {
    // HF's logging_nan_inf_filter: a non-finite step loss counts as the mean since the last log.
    loss = state_.steps_since_log > 0 ? state_.loss_since_log / state_.steps_since_log : 0.0;
  }
  if (scaler_.enabled()) state_.loss_scaler = scaler_.state();

  ++state_.global_step;
  state_.batch_in_epoch += n;
  state_.epoch_float = state_.epoch + static_cast<double>(state_.batch_in_epoch) / run.batches;
  state_.loss_since_log += loss;
  state_.loss_total += loss;
  ++state_.steps_since_log;
  return {loss, grad_norm, state_.batch_in_epoch >= run.batches};
}

void Trainer::after_step(TrainRun& run, const StepResult& step, BatchStream* eval_data, const EvalTask* eval_task) {
  const TrainingArguments& a = args_;
  run.bar->update(state_.global_step, cat("loss ", round_sig(step.loss)));
  notify(TrainerEvent::StepEnd);

  const bool log_now = (a.logging_strategy == "steps" && state_.global_step % a.logging_steps == 0) ||
                       (a.logging_strategy == "epoch" && step.epoch_end) ||
                       (a.logging_first_step && state_.global_step == 1) || state_.global_step == run.max_steps;
  if (log_now && a.logging_strategy != "no") {
    // As HF logs it: the scheduler has stepped, so this is the rate of the next update.
    nlohmann::json entry = {
        {"loss", round_sig(state_.loss_since_log / state_.steps_since_log)},
        {"grad_norm", std::isfinite(step.grad_norm) ? nlohmann::json(round_sig(step.grad_norm)) : nullptr},
        {"learning_rate", run.sched.lr_at(state_.global_step - scaler_.state().skipped_steps)}};
    if (scaler_.enabled()) {
      entry["loss_scale"] = scaler_.scale();
      entry["skipped_steps"] = scaler_.state().skipped_steps;
    }
    log(std::move(entry));
    state_.loss_since_log = 0;
    state_.steps_since_log = 0;
  }
  if (step.epoch_end) {  // the next batch is the first of the next epoch
    ++state_.epoch;
    state_.batch_in_epoch = 0;
    notify(TrainerEvent::EpochEnd);  // before the epoch's evaluation, as in HF's loop
  }
  maybe_evaluate_and_save(eval_data, eval_task, step.epoch_end, run.stop);
  // A callback's stop: after this step's logging, evaluation and saving (HF's loop breaks there).
  if (control_.should_training_stop) run.stop = true;
  if (state_.global_step == pause_step_ && state_.global_step < run.max_steps)
    wait_for_stop_request(*run.stop_request, pause_step_, is_main_process());
  // The signal reaches the ranks at different moments: they agree on the step to stop after.
  // Every rank, pipeline stages included, must agree: the sum runs over the whole world.
  const bool interrupt = callback_ && callback_->interrupt_requested();
  double stops[2] = {run.stop_request->count() > 0 ? 1.0 : 0.0, interrupt ? 1.0 : 0.0};
  if (world_) world_->all_reduce_sum(stops, 2, "stop request");
  if ((stops[0] > 0 || stops[1] > 0) && state_.global_step < run.max_steps) {
    run.bar->finish();
    if (last_saved_step_ != state_.global_step) save_checkpoint_now(false);
    const std::string path = checkpoint_dir(a.output_dir, state_.global_step);
    const int signal_number = stops[0] > 0 ? run.stop_request->first_signal() : SIGINT;
    if (is_main_process())
      progress_message(cat("stop requested (signal ", signal_number, "): stopped after step ", state_.global_step,
                           " of ", run.max_steps, "; resume from ", path));
    throw TrainingInterrupted{path, state_.global_step, signal_number};
  }
}

nlohmann::json Trainer::finish_training(TrainRun& run) {
  const TrainingArguments& a = args_;
  run.bar->finish();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - run.t0).count();
  if (a.load_best_model_at_end && state_.has_best) {
    progress_message(cat("Loading best model from ", state_.best_model_checkpoint, " (",
                         a.best_metric_key(), " = ", state_.best_metric, ")"));
    load_weights(*model_, state_.best_model_checkpoint, pipe_->keeps());
  }
  const int64_t steps_run = state_.global_step - run.start_step;
  // Throughput of the whole job (all ranks), as HF reports it.
  const double all_tokens = all_sum(static_cast<double>(run.tokens), "token count");
  nlohmann::json results = {
      {"train_runtime", round_sig(secs)},
      {"train_samples_per_second", round_sig(static_cast<double>(steps_run) * a.per_device_train_batch_size *
                                             a.gradient_accumulation_steps * data_parallel_size() /
                                             std::max(secs, 1e-9))},
      {"train_steps_per_second", round_sig(steps_run / std::max(secs, 1e-9))},
      {"train_tokens_per_second", round_sig(all_tokens / std::max(secs, 1e-9))},
      {"total_flos", state_.total_flos},
      {"train_loss", state_.global_step > 0 ? state_.loss_total / state_.global_step : 0.0},
      {"epoch", round_sig(state_.epoch_float)},
      {"global_step", state_.global_step}};
  if (dp_->comm_seconds() > 0)
    // Waiting also covers thread hand-over, so on tiny models it can exceed the all-reduce time.
    results["ddp_comm_hidden_fraction"] =
        round_sig(std::clamp(1.0 - dp_->wait_seconds() / dp_->comm_seconds(), 0.0, 1.0));
  if (pipeline_) results.update(pipeline_summary());
  log(results);
  if (is_main_process())
    io::write_file_atomic((fs::path(a.output_dir) / "trainer_state.json").string(), io::python_json(state_.hf_json()) + "\n");
  report_measured_memory();
  notify(TrainerEvent::TrainEnd);
  return results;
}

size_t Trainer::optimizer_state_resident() {
  size_t bytes = 0;
  for (auto& [kind, buf] : optimizer_->state_buffers()) bytes += kernels::resident_bytes(buf->data(), buf->size() * sizeof(float));
  return bytes;
}

size_t Trainer::memory_outside_plan() {
  const size_t planned = kernels::resident_bytes(model_->params().data(), model_->params().size() * sizeof(float)) +
                         kernels::resident_bytes(model_->grads().data(), model_->grads().size() * sizeof(float)) +
                         optimizer_state_resident();
  const size_t now = resident_set_bytes();
  return now > planned ? now - planned : 0;
}

RankMemoryPlan Trainer::memory_plan(int B, int T, EvalShape eval, const TrainingArguments& a) const {
  const int states = a.optimizer_states();
  RankMemoryPlan p;
  if (pipe_->replicas() > 1)
    p = plan_replica_memory(*model_, B, T, pipe_->replicas(), data_parallel_size(), a.sharding_stage(),
                            a.ddp_bucket_cap_mb, states, activation_policy(a), eval);
  else if (pipe_->stages() == 1 && a.microbatches == 1)
    p = plan_rank_memory(*model_, B, T, data_parallel_size(), a.sharding_stage(), a.ddp_bucket_cap_mb, states,
                         activation_policy(a), eval);
  else
    p = plan_stage_memory(*model_, stage_share(*model_, *stages_, pipe_->stage(), dist::parse_pipeline_kind(a.pipeline),
                                               B, a.microbatches),
                          T, data_parallel_size(), a.sharding_stage(), a.ddp_bucket_cap_mb, states,
                          activation_policy(a), eval);
  // Each replica thread multiplies its rows; evaluation runs whole batches on the main thread.
  const size_t train_tokens = static_cast<size_t>((B + pipe_->replicas() - 1) / pipe_->replicas()) * T;
  const size_t eval_tokens = static_cast<size_t>(eval.B > 0 ? eval.B : B) * (eval.T > 0 ? eval.T : T);
  p.product_operands =
      static_cast<size_t>(pipe_->replicas()) *
      product_operand_bytes(requested_precision(a), model_->config(), std::max(train_tokens, eval_tokens), kernels::on_cuda());
  return p;
}

void Trainer::report_measured_memory() {
  RankMemoryMeasured m;
  m.peak_rss = peak_resident_bytes();
  m.gradients_peak = dp_->peak_gradient_bytes() + pipe_->borrowed_gradient_bytes();
  m.optimizer_state = optimizer_state_resident();
  m.parameters = kernels::resident_bytes(model_->params().data(), model_->params().size() * sizeof(float));
  // The prediction: the plan at the largest batch shape trained on (with an evaluation pass
  // if one ran), plus what the process held besides the planned buffers before training.
  const RankMemoryPlan plan = memory_plan(largest_batch_.first, largest_batch_.second, largest_eval_batch_);
  m.predicted_peak = held_before_training_ + plan.total() + (largest_eval_batch_.B > 0 ? plan.evaluation : 0);
  m.held_before_training = held_before_training_;
  m.offload_pool = pipe_->offload_pool_bytes();
  const std::string mine = format_measured_memory(world_ ? world_->rank() : 0, m);
  const std::vector<std::string> all = world_ ? world_->all_gather_bytes(mine, "measured memory") : std::vector{mine};
  if (!is_main_process()) return;
  for (const std::string& line : all) progress_message(line);
}

nlohmann::json Trainer::pipeline_summary() {
  // Every stage's compute and schedule time, gathered over the pipeline group. All stages start
  // a step together (the previous step's gradient norm is a collective over them), and the
  // step's pipeline phase lasts as long as the longest stage's schedule: a stage idles for the
  // rest of it, waiting for its neighbours or, when its last op is done, for the others.
  const size_t p = static_cast<size_t>(pipe_->stages()), me = static_cast<size_t>(pipe_->stage());
  std::vector<double> t(2 * p, 0.0);  // busy, schedule per stage
  t[me] = pipe_->schedule_seconds() - pipe_->idle_seconds();
  t[p + me] = pipe_->schedule_seconds();
  pipeline_->all_reduce_sum(t.data(), t.size(), "pipeline bubble");
  const double span = std::max(*std::max_element(t.begin() + static_cast<std::ptrdiff_t>(p), t.end()), 1e-9);
  double mean = 0;
  std::string per_stage;
  for (size_t s = 0; s < p; ++s) {
    const double idle = 1 - t[s] / span;
    mean += idle / static_cast<double>(p);
    per_stage += cat(s ? ", " : "", round_sig(idle));
  }
  const double theory = dist::theoretical_bubble(pipe_->stages(), args_.microbatches);
  if (is_main_process())
    progress_message(cat("pipeline bubble: stages idle ", round_sig(mean), " of the pipeline phase of a step (per stage: ",
                         per_stage, "); theory (p-1)/(m+p-1) = (", p, "-1)/(", args_.microbatches, "+", p, "-1) = ",
                         round_sig(theory)));
  return {{"pipeline_bubble_measured", round_sig(mean)}, {"pipeline_bubble_theoretical", round_sig(theory)}};
}

void Trainer::with_whole_model(const std::function<void(const Model<float>&)>& write) {
  // The first stage of data-parallel replica 0 (rank 0) gathers; the other replicas hold copies.
  // With tensor parallelism each tensor-parallel rank of replica 0 gathers its stages' slices,
  // then the first stage's tensor-parallel ranks put the whole tensors together at rank 0.
  const bool replica0 = !comm_ || comm_->rank() == 0;
  const bool gathers = pipeline_ && replica0;
  if (gathers) pipe_->gather_parameters_to_first();
  if (tensor_) {
    if (replica0 && pipe_->stage() == 0) {
      const std::unique_ptr<Model<float>> whole = gather_whole_model(*model_, *tensor_);
      if (is_main_process()) write(*whole);
    }
  } else if (is_main_process()) {
    write(*model_);
  }
  if (gathers) pipe_->release_other_stages();
}

void Trainer::write_optimizer(const std::string& dir) {
  // Tensor parallelism: the unsplit layout, put together at rank 0, which any layout resumes from.
  if (tensor_) {
    const bool writes = dp_->sharded() || !comm_ || comm_->rank() == 0;
    write_optimizer_unsplit(dir, model_->table(), model_->tensor_split(), *optimizer_, writes, *world_);
    return;
  }
  // One process, or data parallel without sharding: every rank holds the whole state; rank 0
  // writes it by parameter name.
  if (!pipeline_ && !dp_->sharded()) {
    if (is_main_process()) write_optimizer_state(dir, model_->table(), *optimizer_);
    return;
  }
  SliceLayout lay;
  lay.zero_stage = dp_->zero_stage();
  lay.data_parallel_degree = data_parallel_size();
  lay.pipeline_parallel_degree = pipe_->stages();
  lay.data_parallel_rank = comm_ ? comm_->rank() : 0;
  lay.pipeline_stage = pipe_->stage();
  lay.shards = dp_->sharded() ? &dp_->shards() : nullptr;
  // Unsharded replicas of a stage hold the same state: replica 0 writes it.
  const bool writes = dp_->sharded() || lay.data_parallel_rank == 0;
  write_optimizer_slices(dir, model_->table(), *optimizer_, writes, lay, *world_);
}

void Trainer::maybe_evaluate_and_save(BatchStream* eval_data, const EvalTask* eval_task, bool epoch_end, bool& stop) {
  const TrainingArguments& a = args_;
  const int64_t step = state_.global_step;
  // eval_delay counts steps or epochs, by the strategy, as HF's DefaultFlowCallback does.
  const bool eval_now = eval_data && ((a.eval_strategy == "steps" && step % a.eval_steps == 0 && step >= a.eval_delay) ||
                                      (a.eval_strategy == "epoch" && epoch_end && state_.epoch_float >= a.eval_delay));
  const bool save_now = (a.save_strategy == "steps" && step % a.save_steps == 0) ||
                        (a.save_strategy == "epoch" && epoch_end);
  bool improved = false;
  if (eval_now) {
    const nlohmann::json m = evaluate(*eval_data, "eval", eval_task);
    log(m);
    notify(TrainerEvent::Evaluate, m);
    const std::string key = a.best_metric_key();
    if (!a.metric_for_best_model.empty()) {
      if (!m.contains(key)) fail("metric_for_best_model '", a.metric_for_best_model, "': evaluation reports ", m.dump());
      const double v = m[key].get<double>();
      const bool greater = a.best_is_greater();
      const bool better = !state_.has_best || (greater ? v > state_.best_metric : v < state_.best_metric);
      // HF's EarlyStoppingCallback: an improvement counts only when larger than the threshold.
      const bool significant = better && (!state_.has_best || std::abs(v - state_.best_metric) > a.early_stopping_threshold);
      if (significant) {
        state_.early_stopping_counter = 0;
      } else if (a.early_stopping_patience > 0 && ++state_.early_stopping_counter >= a.early_stopping_patience) {
        progress_message(cat("early stopping: ", key, " has not improved by more than ", a.early_stopping_threshold,
                             " for ", a.early_stopping_patience, " evaluations (best ", state_.best_metric, ")"));
        stop = true;
      }
      if (better) {
        state_.best_metric = v;
        state_.has_best = true;
        if (a.save_strategy != "no") state_.best_global_step = step;
        improved = true;
      }
    }
  }
  if (save_now || (stop && a.save_strategy != "no")) {
    if (improved) state_.best_model_checkpoint = checkpoint_dir(a.output_dir, step);
    save_checkpoint_now(stop || step >= state_.max_steps);
  }
}

void Trainer::save_checkpoint_now(bool training_stops) {
  const TrainingArguments& a = args_;
  state_.saved_checkpoint = true;
  state_.training_stopped_at_save = training_stops;
  // Rank 0 alone writes: the weights gathered from the pipeline stages, the optimizer state
  // sent to it slice by slice (optimizer_files.h), so no rank needs a shared file system.
  with_whole_model([&](const Model<float>& whole) {
    save_checkpoint(a.output_dir, whole, [&](const std::string& dir) { write_optimizer(dir); }, state_,
                    tokenizer_dir_, training_arguments_json(a), a.max_shard_bytes());
    rotate_checkpoints(a.output_dir, a.save_total_limit, state_.has_best ? state_.best_model_checkpoint : "");
  });
  if (!is_main_process()) write_optimizer("");  // sends this rank's slice to rank 0, if it has one to write
  if (world_) world_->barrier("checkpoint written");
  last_saved_step_ = state_.global_step;
  notify(TrainerEvent::Save, {{"checkpoint", checkpoint_dir(a.output_dir, state_.global_step)}});
}

nlohmann::json Trainer::evaluate(BatchStream& data, const std::string& prefix, const EvalTask* task) {
  return predict(data, prefix, task).metrics;
}

Trainer::PassResult Trainer::predict(BatchStream& data, const std::string& prefix, const EvalTask* task,
                                     bool keep_arrays) {
  const MatmulPrecisionScope products(precision_.eval, precision_.path);
  if (!task) {
    if (!default_task_) default_task_ = default_eval_task(model_->config(), args_.predict_output_format, args_.task_name);
    task = default_task_.get();
  }
  const auto t0 = std::chrono::steady_clock::now();
  data.start(0, 0);
  // Every pass of this call (this rank's, the union, another stage's copy) keeps the arrays
  // when they are wanted.
  auto start_pass = [&, keep = keep_arrays || compute_metrics_] {
    std::unique_ptr<EvalPass> p = task->start();
    if (keep) p->keep_arrays();
    return p;
  };
  std::unique_ptr<EvalPass> pass = start_pass();
  double loss_sum = 0, norm = 0;
  Batch b;
  std::vector<std::vector<float>> host_outputs;  // on a GPU
  while (data.next(b)) {
    if (b.B == 0) continue;
    largest_eval_batch_.B = std::max(largest_eval_batch_.B, b.B);
    largest_eval_batch_.T = std::max(largest_eval_batch_.T, b.T);
    // Through the pipeline every stage reads the same batch; the last one has the outputs.
    ModelState* st = pipe_->infer(b);
    if (!st) continue;
    const double n = label_count(model_->config(), b);
    if (n > 0) {
      loss_sum += model_->loss(b, *st, n).loss * n;
      norm += n;
    }
    std::vector<HeadOutput<float>> outputs = model_->head_outputs(b, *st);
    pass->add(b, pass->reads_device_outputs() ? outputs : outputs_on_host(std::move(outputs), host_outputs));
  }
  pipe_->finish_infer();
  if (comm_ && (!pipeline_ || pipe_->is_last())) {  // every replica saw its shard: the union, on every replica
    std::unique_ptr<EvalPass> all = start_pass();
    for (const std::string& p : comm_->all_gather_bytes(pass->serialize(), "evaluation outputs")) all->merge(p);
    pass = std::move(all);
    loss_sum = all_sum(loss_sum, "evaluation loss");
    norm = all_sum(norm, "evaluation label count");
  }
  if (pipeline_) {  // the last stage's results, to every stage
    std::string bytes = pass->serialize();
    uint64_t size = bytes.size();
    const int last = pipe_->stages() - 1;
    pipeline_->broadcast(&size, sizeof size, last, "evaluation outputs size");
    bytes.resize(size);
    pipeline_->broadcast(bytes.data(), size, last, "evaluation outputs");
    double sums[2] = {loss_sum, norm};
    pipeline_->broadcast(sums, sizeof sums, last, "evaluation loss");
    loss_sum = sums[0];
    norm = sums[1];
    if (!pipe_->is_last()) {
      pass = start_pass();
      pass->merge(bytes);
    }
  }
  PassResult r;
  pass->metrics(prefix, norm > 0 ? loss_sum / norm : std::nan(""), r.metrics);
  if (compute_metrics_) {  // HF: keys get the prefix unless they have it
    const nlohmann::json extra = compute_metrics_(pass->arrays());
    if (!extra.is_object()) fail("compute_metrics returned ", extra.dump(), "; expected a dict of metric name -> number");
    for (const auto& [k, v] : extra.items()) r.metrics[k.rfind(prefix + "_", 0) == 0 ? k : prefix + "_" + k] = v;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.metrics[prefix + "_runtime"] = round_sig(secs);
  r.metrics[prefix + "_samples_per_second"] = round_sig(data.num_examples() / std::max(secs, 1e-9));
  r.metrics["epoch"] = round_sig(state_.epoch_float);
  r.outputs = std::move(pass);
  return r;
}

void Trainer::save_model(const std::string& dir) {
  with_whole_model([&](const Model<float>& whole) {
    save_pretrained(whole, dir, args_.max_shard_bytes());
    copy_tokenizer_files(tokenizer_dir_, dir);
  });
}

}  // namespace strata
