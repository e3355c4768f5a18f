// Trainer checkpoints: OUTPUT_DIR/checkpoint-<step>/ holding
//   config.json + model.safetensors   (an HF model directory: from_pretrained loads it)
//   tokenizer files                   (copied from the tokenizer directory)
//   optimizer state                   (optimizer_files.h: optimizer.safetensors with
//                                      exp_avg.<name>, exp_avg_sq.<name> | momentum_buffer.<name>;
//                                      or, under ZeRO, per-rank slices + optimizer_layout.json)
//   trainer_state.json                (HF's TrainerState: TrainerState.load_from_json reads it)
//   strata_state.json                 (what resuming needs beyond it: data position, running losses,
//                                      seeds, early-stopping counter)
//   training_args.json
// Written into a temporary directory and renamed when complete, and deleted by renaming it
// away first, so a crash never leaves a checkpoint-<step> that looks whole but is not
// (tests/crash/crash_consistency.sh kills runs at random moments to show it).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/model.h"
#include "train/loss_scaler.h"
#include "train/optimizer.h"

namespace strata {

// The Trainer's state. hf_json() is exactly HF's TrainerState of transformers v4.36 (the
// fields, sorted, as TrainerState.save_to_json writes them); resume_json() is the rest of what
// a resumed run needs to continue bit for bit.
struct TrainerState {
  // HF's TrainerState
  int64_t global_step = 0;
  double epoch_float = 0;  // HF's fractional epoch
  int64_t max_steps = 0;
  int64_t logging_steps = 500, eval_steps = 500, save_steps = 500;  // as the arguments set them
  int64_t train_batch_size = 0;                                     // per device
  int64_t num_train_epochs = 0;                                     // epochs the run spans
  int64_t num_input_tokens_seen = 0;                                // input ids of every rank, padding included
  double total_flos = 0;  // 6 x input tokens x non-embedding parameters, as HF's floating_point_ops
  nlohmann::json log_history = nlohmann::json::array();
  double best_metric = 0;
  bool has_best = false;
  std::string best_model_checkpoint;
  std::optional<int64_t> best_global_step;  // the step of best_metric, where checkpoints are saved
  // HF's stateful_callbacks: TrainerControl as it was at the last checkpoint (saved there, and
  // whether training stopped with it) and, where early stopping is on (patience > 0),
  // EarlyStoppingCallback's arguments and its counter (early_stopping_counter below).
  bool saved_checkpoint = false, training_stopped_at_save = false;
  int early_stopping_patience = 0;
  double early_stopping_threshold = 0;
  // strata's resume state
  int64_t epoch = 0;           // epoch the next batch belongs to
  int64_t batch_in_epoch = 0;  // index of the next batch to read in that epoch
  int64_t global_batch_size = 0;  // per-device batch x ranks when saved: locates the data position
  uint64_t seed = 0, data_seed = 0;
  int early_stopping_counter = 0;
  // Running sums behind the logged training loss, kept so a resumed run logs the same values.
  double loss_since_log = 0, loss_total = 0;
  int64_t steps_since_log = 0;
  // fp16's loss scale, its clean-step count and the steps skipped (train/loss_scaler.h); unset
  // when the run trained without loss scaling.
  std::optional<LossScalerState> loss_scaler;

  nlohmann::json hf_json() const;      // trainer_state.json
  nlohmann::json resume_json() const;  // strata_state.json
  // From a checkpoint's two files; `source` names the directory in errors.
  static TrainerState from_json(const nlohmann::json& hf, const nlohmann::json& resume, const std::string& source);
};

// Saves everything into OUTPUT_DIR/checkpoint-<global_step>; returns its path.
// write_optimizer(dir) writes the optimizer state into the (temporary) checkpoint directory.
std::string save_checkpoint(const std::string& output_dir, const Model<float>& model,
                            const std::function<void(const std::string&)>& write_optimizer,
                            const TrainerState& state, const std::string& tokenizer_dir,
                            const std::string& training_args_json, uint64_t max_shard_bytes);

// Restores optimizer state (of opt's slice, from any layout) and trainer state from a
// checkpoint directory whose model weights the caller has loaded. Errors name the file (and
// the tensor) that does not fit the model.
TrainerState load_checkpoint_state(const std::string& dir, const Model<float>& model, Optimizer<float>& opt);

// checkpoint-<N> directories under output_dir, oldest (smallest N) first.
std::vector<std::string> list_checkpoints(const std::string& output_dir);

// Deletes a checkpoint directory so that no crash leaves a partial one under its name.
void remove_checkpoint(const std::string& dir);

// Removes the hidden directories a killed writer left in output_dir (a checkpoint being written
// or deleted, of a pid that no longer runs), so repeated crashes do not fill the disk.
void remove_checkpoint_debris(const std::string& output_dir);

// Deletes the oldest checkpoints beyond `limit` (0 = keep all), never the newest and never `keep`.
void rotate_checkpoints(const std::string& output_dir, int limit, const std::string& keep);

// Copies the tokenizer files HF's AutoTokenizer reads from src_dir to dst_dir.
void copy_tokenizer_files(const std::string& src_dir, const std::string& dst_dir);

}  // namespace strata
