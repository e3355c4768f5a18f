// What the Trainer's evaluation and prediction passes do with a model's outputs, per task.
// An EvalPass collects what a data split's batches give (each rank its shard), merges the
// other ranks' parts, and turns the union into HF's metrics and prediction files. One
// implementation per kind of task: sequence classification and language modelling
// (default_eval_task), token classification (token_cls_eval.h) and question answering
// (qa_eval.h). A split's task is made with what it needs: a QA split brings its examples
// and features, which post-processing maps the logits back through.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/batch.h"
#include "models/config.h"
#include "models/model.h"
#include "train/trainer_callback.h"

namespace strata {

class EvalPass {
 public:
  virtual ~EvalPass() = default;
  // One batch and the head's outputs on it (Model::head_outputs after infer).
  virtual void add(const Batch& b, const std::vector<HeadOutput<float>>& outputs) = 0;
  // What add() collected, as bytes another rank merges (distributed evaluation).
  virtual std::string serialize() const = 0;
  virtual void merge(const std::string& bytes) = 0;
  // Metrics of everything collected, as "<prefix>_<name>" keys. `loss` is the pass's mean
  // loss, or NaN when the data had no labels to take one on.
  virtual void metrics(const std::string& prefix, double loss, nlohmann::json& out) const = 0;
  // Writes the prediction files into `dir` (HF's names, `prefix` where HF puts one) and
  // returns the first one's path.
  virtual std::string write_predictions(const std::string& dir, const std::string& prefix) const = 0;
  // Everything collected as HF's EvalPrediction arrays (compute_metrics, predict() in Python).
  // Tasks that keep no per-example outputs (language modelling, token classification and
  // question answering keep what their metrics need) fail naming what they offer instead.
  virtual PredictionArrays arrays() const;
  // Asks the pass, before its first add(), to keep what arrays() needs where its metrics need
  // less (token classification keeps each token's logits then). Called when compute_metrics is
  // set or a caller wants the arrays.
  virtual void keep_arrays() {}
  // Whether add() takes the outputs where the model left them (on a GPU: device memory, which
  // the pass reduces there, e.g. to argmax ids, and copies only the result), instead of host
  // copies of them.
  virtual bool reads_device_outputs() const { return false; }
};

class EvalTask {
 public:
  virtual ~EvalTask() = default;
  virtual std::unique_ptr<EvalPass> start() const = 0;
};

// Sequence classification (metrics by problem type; predictions as HF's text file, or CSV or
// JSONL with label names and probabilities, by `predict_format`, in
// <prefix>_results[_<glue_task>].<format>, glue_task being run_glue's task_name) and masked /
// causal LM (perplexity and the accuracy of the labelled tokens; no prediction file).
std::unique_ptr<EvalTask> default_eval_task(const ModelConfig& cfg, const std::string& predict_format,
                                            const std::string& glue_task = "");

// Shared by the passes: a msgpack round trip of a JSON value.
std::string pack(const nlohmann::json& j);
nlohmann::json unpack(const std::string& bytes);

}  // namespace strata
