// The Trainer: HF Trainer's loop and behaviour over strata's model, optimizer, scheduler and
// a BatchStream. Gradient accumulation normalises by the labels of the whole accumulated
// batch; dropout seeds derive from (seed, step, micro-batch), data order from (seed, epoch),
// so a run resumed from any checkpoint reproduces the uninterrupted run exactly.
#pragma once
#include <memory>
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
#include "train/optimizer.h"
#include "train/training_args.h"

namespace strata {

class Trainer {
 public:
  // With a communicator of several ranks (the data-parallel group) the Trainer runs data
  // parallel: every rank reads its shard of each batch, gradients are summed over ranks in
  // buckets while backward runs, the loss is normalised by the labels of the global batch, and
  // only rank 0 writes. args.sharding_stage() > 0 shards the optimizer state (and, at stage 2, the
  // gradients) over the ranks (data_parallel_step.h).
  Trainer(TrainingArguments args, std::unique_ptr<Model<float>> model, std::string tokenizer_dir,
          dist::Communicator* comm = nullptr);

  // Trains per the arguments (resuming if asked); returns the train_results.json content.
  // eval_task: what evaluations on eval_data compute (null: default_eval_task of the model).
  nlohmann::json train(BatchStream& train_data, BatchStream* eval_data, const EvalTask* eval_task = nullptr);
  // Loss and metrics over the stream, keys prefixed ("eval_loss", "eval_f1", ...).
  nlohmann::json evaluate(BatchStream& data, const std::string& prefix = "eval", const EvalTask* task = nullptr);
  // One pass over the stream: the metrics (those the data's labels allow) and the outputs of
  // every example, gathered from all ranks, to write predictions from.
  struct PassResult {
    nlohmann::json metrics;
    std::unique_ptr<EvalPass> outputs;
  };
  PassResult predict(BatchStream& data, const std::string& prefix = "predict", const EvalTask* task = nullptr);

  Model<float>& model() { return *model_; }
  bool is_main_process() const { return !comm_ || comm_->rank() == 0; }
  int world_size() const { return comm_ ? comm_->size() : 1; }
  const TrainingArguments& args() const { return args_; }
  // Writes the final model (config.json with label names, weights, tokenizer files).
  void save_model(const std::string& dir) const;
  // Appends an entry (metrics) to the log history and trainer_log.jsonl, with the step and
  // epoch, as HF's Trainer.log does.
  void log(nlohmann::json entry);
  const TrainerState& state() const { return state_; }

 private:
  struct Step;
  std::string log_path() const;  // trainer_log.jsonl, in logging_dir (default output_dir)
  void maybe_evaluate_and_save(BatchStream* eval_data, const EvalTask* eval_task, bool epoch_end, bool& stop);
  void resume_from(const std::string& checkpoint);
  void report_measured_memory();  // every rank's measured memory, printed by rank 0
  size_t optimizer_state_resident();
  // Resident bytes besides parameters, gradients and optimizer state (code, libraries, data).
  size_t memory_outside_plan();
  std::string resolve_checkpoint(const std::string& spec) const;

  double all_sum(double v, const char* what);

  TrainingArguments args_;
  dist::Communicator* comm_;
  std::unique_ptr<Model<float>> model_;
  std::unique_ptr<DataParallelStep> dp_;
  std::string tokenizer_dir_;
  std::unique_ptr<Optimizer<float>> optimizer_;
  TrainerState state_;
  std::unique_ptr<ModelState> acts_;  // the model's forward state, reused across steps
  size_t held_before_training_ = 0;   // memory_outside_plan() when training started
  std::pair<int, int> largest_batch_{0, 0};  // B and T: the shape the memory plan peaks at
  std::unique_ptr<EvalTask> default_task_;  // built on first use: tasks that need data have none
};

}  // namespace strata
