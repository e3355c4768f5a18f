// The Trainer: HF Trainer's loop and behaviour over strata's model, optimizer, scheduler and
// a BatchStream. Gradient accumulation normalises by the labels of the whole accumulated
// batch; dropout seeds derive from (seed, step, micro-batch), data order from (seed, epoch),
// so a run resumed from any checkpoint reproduces the uninterrupted run exactly.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/encoder_model.h"
#include "train/batch_stream.h"
#include "train/checkpoint.h"
#include "train/optimizer.h"
#include "train/training_args.h"

namespace strata {

struct Prediction {
  std::vector<float> logits;  // num_labels values
  int32_t label = -1;         // single-label target, -1 when unknown
  std::vector<double> target; // regression / multi-label targets, empty when unknown
};

class Trainer {
 public:
  Trainer(TrainingArguments args, std::unique_ptr<EncoderModel<float>> model, std::string tokenizer_dir);

  // Trains per the arguments (resuming if asked); returns the train_results.json content.
  nlohmann::json train(BatchStream& train_data, BatchStream* eval_data);
  // Loss and metrics over the stream, keys prefixed ("eval_loss", "eval_f1", ...).
  nlohmann::json evaluate(BatchStream& data, const std::string& prefix = "eval");
  // Logits (and labels, where the data has them) for every example, in dataset order.
  std::vector<Prediction> predict(BatchStream& data);

  EncoderModel<float>& model() { return *model_; }
  const TrainingArguments& args() const { return args_; }
  // Writes the final model (config.json with label names, weights, tokenizer files).
  void save_model(const std::string& dir) const;

 private:
  struct Step;
  void log(nlohmann::json entry);
  void maybe_evaluate_and_save(BatchStream* eval_data, bool epoch_end, bool& stop);
  void resume_from(const std::string& checkpoint);
  std::string resolve_checkpoint(const std::string& spec) const;

  TrainingArguments args_;
  std::unique_ptr<EncoderModel<float>> model_;
  std::string tokenizer_dir_;
  std::unique_ptr<Optimizer<float>> optimizer_;
  TrainerState state_;
  Activations<float> acts_;
};

}  // namespace strata
