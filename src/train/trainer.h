// The Trainer: HF Trainer's loop and behaviour over strata's model, optimizer, scheduler and
// a BatchStream. Gradient accumulation normalises by the labels of the whole accumulated
// batch; dropout seeds derive from (seed, step, micro-batch), data order from (seed, epoch),
// so a run resumed from any checkpoint reproduces the uninterrupted run exactly.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dist/communicator.h"
#include "models/model.h"
#include "core/batch_stream.h"
#include "train/checkpoint.h"
#include "train/data_parallel_step.h"
#include "train/eval_task.h"
#include "train/log_reporters.h"
#include "train/loss_scaler.h"
#include "train/memory_plan.h"
#include "train/mixed_precision.h"
#include "train/optimizer.h"
#include "train/pipeline_stages.h"
#include "train/pipeline_step.h"
#include "train/trainer_callback.h"
#include "train/training_args.h"

namespace strata {

// Thrown by Trainer::train when a stop was requested (SIGTERM or SIGUSR1): every rank has
// finished the same step and `checkpoint` holds that step, ready for resume_from_checkpoint.
struct TrainingInterrupted {
  std::string checkpoint;
  int64_t step;
  int signal_number;
};

// The process groups a Trainer runs over; null (or a group of one) for none.
struct TrainerGroups {
  dist::Communicator* world = nullptr;     // every rank: barriers, checkpoint files, measured memory
  dist::Communicator* data = nullptr;      // the replicas of this rank's pipeline stage
  dist::Communicator* pipeline = nullptr;  // the stages of this rank's replica, ranked by stage
  // The tensor-parallel ranks whose slices make this rank's layers; the model was built for
  // this split (ModelConfig::tensor_split) and its tensor group bound to it.
  dist::Communicator* tensor = nullptr;
  // Ranks of the job on this rank's machine: they share its memory, so the memory check
  // (Trainer::check_memory_fits) gives each an equal part of what is free.
  int ranks_on_machine = 1;
};

class Trainer {
 public:
  // With a data-parallel group of several ranks the Trainer runs data parallel: every rank
  // reads its shard of each batch, gradients are summed over ranks in buckets while backward
  // runs, the loss is normalised by the labels of the global batch, and only rank 0 writes.
  // args.sharding_stage() > 0 shards the optimizer state (and, at stage 2, the gradients) over
  // the ranks (data_parallel_step.h). With a pipeline group of several ranks each rank runs one
  // stage of the model (pipeline_step.h) on the batches of its data-parallel rank, and owns only
  // that stage's parameters, gradients and optimizer state.
  Trainer(TrainingArguments args, std::unique_ptr<Model<float>> model, std::string tokenizer_dir,
          TrainerGroups groups = {});

  // Trains per the arguments (resuming if asked); returns the train_results.json content.
  // eval_task: what evaluations on eval_data compute (null: default_eval_task of the model).
  // SIGTERM / SIGUSR1 during training end it after the current step with a checkpoint, by
  // throwing TrainingInterrupted (on every rank).
  nlohmann::json train(BatchStream& train_data, BatchStream* eval_data, const EvalTask* eval_task = nullptr);
  // Loss and metrics over the stream, keys prefixed ("eval_loss", "eval_f1", ...).
  nlohmann::json evaluate(BatchStream& data, const std::string& prefix = "eval", const EvalTask* task = nullptr);
  // One pass over the stream: the metrics (those the data's labels allow) and the outputs of
  // every example, gathered from all ranks, to write predictions from.
  struct PassResult {
    nlohmann::json metrics;
    std::unique_ptr<EvalPass> outputs;
  };
  // `keep_arrays`: the outputs keep what EvalPass::arrays() needs (compute_metrics asks it too).
  PassResult predict(BatchStream& data, const std::string& prefix = "predict", const EvalTask* task = nullptr,
                     bool keep_arrays = false);

  Model<float>& model() { return *model_; }
  const PipelineStep& pipeline() const { return *pipe_; }  // this rank's stage (one stage without a pipeline)
  bool is_main_process() const { return !world_ || world_->rank() == 0; }
  int data_parallel_size() const { return comm_ ? comm_->size() : 1; }
  const TrainingArguments& args() const { return args_; }
  // Writes the final model (config.json with label names, weights, tokenizer files). Collective
  // over the pipeline (every stage sends its parameters to rank 0, which writes).
  void save_model(const std::string& dir);
  // Appends an entry (metrics) to the log history and trainer_log.jsonl, with the step and
  // epoch, as HF's Trainer.log does.
  void log(nlohmann::json entry);
  const TrainerState& state() const { return state_; }
  // After step `step` of train() every rank waits, up to kPauseSeconds, for a stop request
  // before the ranks agree whether to stop: an interruption sent once rank 0 logs that it
  // waits (core/exit_status.h) stops the run after exactly that step. -1: no pause.
  void pause_after_step(int64_t step) { pause_step_ = step; }
  // The next train() resumes from `spec` (a checkpoint directory or "latest"), as the option
  // resume_from_checkpoint has it: the Python package's train(resume_from_checkpoint=...).
  void set_resume_from_checkpoint(std::string spec) { args_.resume_from_checkpoint = std::move(spec); }
  // The events of train() go to `callback` (trainer_callback.h; null: none). Not owned.
  void set_callback(TrainerCallback* callback) { callback_ = callback; }
  // Metrics of every evaluation and prediction pass, besides the task's own (HF's
  // compute_metrics): in train()'s evaluations too, so metric_for_best_model may name them.
  void set_compute_metrics(ComputeMetrics f) { compute_metrics_ = std::move(f); }
  // This rank's memory plan for batches of B x T under the run's settings: its pipeline
  // stage's, with its replica threads (memory_plan.h).
  RankMemoryPlan memory_plan(int B, int T, EvalShape eval) const { return memory_plan(B, T, eval, args_); }

 private:
  // train() in its parts: begin (resume, TrainerState, the banner), one optimizer step, what
  // follows it (logging, evaluation, saving, stopping), finish (train_results).
  struct TrainRun;
  struct StepResult;
  void begin_training(const TrainRun& run, size_t num_examples);
  StepResult train_step(TrainRun& run, BatchStream& train_data);
  void after_step(TrainRun& run, const StepResult& step, BatchStream* eval_data, const EvalTask* eval_task);
  nlohmann::json finish_training(TrainRun& run);
  std::string log_path() const;  // trainer_log.jsonl, in logging_dir (default output_dir)
  void maybe_evaluate_and_save(BatchStream* eval_data, const EvalTask* eval_task, bool epoch_end, bool& stop);
  // checkpoint-<global_step>, written by rank 0; every rank waits. `training_stops`: training ends
  // with this checkpoint (its last step, or early stopping), as HF's TrainerControl records.
  void save_checkpoint_now(bool training_stops);
  void resume_from(const std::string& checkpoint);
  void report_measured_memory();  // every rank's measured memory, printed by rank 0
  nlohmann::json pipeline_summary();  // the measured and theoretical bubble, printed by rank 0
  // Rank 0 holds the whole model while `write` runs on it (gathered from the pipeline stages,
  // and put together from the tensor-parallel slices).
  void with_whole_model(const std::function<void(const Model<float>&)>& write);
  void write_optimizer(const std::string& dir);  // collective: rank 0 writes, the others send
  size_t optimizer_state_resident();
  // Resident bytes besides parameters, gradients and optimizer state (code, libraries, data).
  size_t memory_outside_plan();
  // This rank's memory plan for batches of B x T (its pipeline stage's), under the
  // activation and sharding settings of `a`.
  RankMemoryPlan memory_plan(int B, int T, EvalShape eval, const TrainingArguments& a) const;
  // Before the first step: refuses (strata::Error) a run whose plan does not fit the memory
  // this process may take (util/memory_headroom.h), naming both figures and settings that fit.
  // STRATA_SKIP_MEMORY_CHECK=1 skips it.
  void check_memory_fits(EvalShape eval) const;
  std::string resolve_checkpoint(const std::string& spec) const;

  double all_sum(double v, const char* what);
  void notify(TrainerEvent event, const nlohmann::json& payload = nlohmann::json::object());

  TrainingArguments args_;
  MixedPrecision precision_;  // the products' precision in training and evaluation
  LossScaler scaler_;         // fp16's dynamic loss scale (disabled otherwise)
  dist::Communicator* world_;     // null: one process
  dist::Communicator* comm_;      // the data-parallel group; null: one replica
  dist::Communicator* pipeline_;  // null: one stage
  dist::Communicator* tensor_;    // null: no tensor parallelism
  int ranks_on_machine_;
  std::unique_ptr<Model<float>> model_;
  std::unique_ptr<PipelineStages> stages_;
  std::unique_ptr<PipelineStep> pipe_;
  std::unique_ptr<DataParallelStep> dp_;
  std::string tokenizer_dir_;
  std::unique_ptr<Optimizer<float>> optimizer_;
  TrainerState state_;
  size_t held_before_training_ = 0;   // memory_outside_plan() when training started
  std::pair<int, int> largest_batch_{0, 0};  // B and T: the shape the memory plan peaks at
  EvalShape largest_eval_batch_;             // ... and of the evaluations run during training
  std::unique_ptr<EvalTask> default_task_;  // built on first use: tasks that need data have none
  int64_t last_saved_step_ = -1;
  int64_t pause_step_ = -1;
  TrainerCallback* callback_ = nullptr;
  TrainerControl control_;  // what the callback asked during the current train()
  ComputeMetrics compute_metrics_;
  // report_to's reporters, made at the first log entry so a run that logs nothing writes no files.
  std::optional<std::vector<std::unique_ptr<LogReporter>>> reporters_;
};

}  // namespace strata
