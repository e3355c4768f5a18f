// HF's TrainerCallback, for code that drives the Trainer from outside (the Python package,
// python/strata): the Trainer reports its events to one TrainerCallback, on every rank, on
// the thread that called train(), between steps. The callback may stop training through
// TrainerControl, as HF's callbacks do, or interrupt it (Ctrl-C in Python).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/checkpoint.h"

namespace strata {

// HF's TrainerCallback event names, in the order a step raises them.
enum class TrainerEvent { TrainBegin, StepEnd, EpochEnd, Log, Evaluate, Save, TrainEnd };
const char* event_name(TrainerEvent e);  // "on_train_begin", "on_step_end", ...

// HF's TrainerControl, as far as a callback steers strata's loop: should_training_stop ends
// training after the current step's logging, evaluation and saving, as the step's strategies
// have them (HF's loop breaks there); train() then returns as usual.
struct TrainerControl {
  bool should_training_stop = false;
};

class TrainerCallback {
 public:
  virtual ~TrainerCallback() = default;
  // `payload`: the entry for Log, the metrics for Evaluate, {"checkpoint": dir} for Save, {} otherwise.
  virtual void on_event(TrainerEvent event, const TrainerState& state, const nlohmann::json& payload,
                        TrainerControl& control) = 0;
  // Polled after every step: true stops training after it with a checkpoint, as SIGTERM does
  // (train() throws TrainingInterrupted, signal_number SIGINT). Every rank must agree: the
  // ranks sum their requests, so one rank's request stops them all after the same step.
  virtual bool interrupt_requested() { return false; }
};

// What HF's EvalPrediction holds after an evaluation or prediction pass: the head's outputs
// and the labels of every example, in dataset order, row-major. `label_ids` is int64 for
// single-label classification (-100 where an example has no label) and float otherwise
// (regression, multi-label); empty when the data had no labels.
struct PredictionArrays {
  std::vector<float> predictions;
  std::vector<int64_t> predictions_shape;
  std::vector<int64_t> int_labels;
  std::vector<float> float_labels;
  std::vector<int64_t> labels_shape;  // empty: no labels
};

// A compute_metrics function: the pass's arrays (its own copy, to hand on without copying) to
// metrics (name -> number). The Trainer adds them to the pass's own, prefixed as HF prefixes
// them ("eval_accuracy").
using ComputeMetrics = std::function<nlohmann::json(PredictionArrays)>;

}  // namespace strata
