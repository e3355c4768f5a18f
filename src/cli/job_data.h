// The data side of `strata train | evaluate | predict`, per task, as HF's example scripts
// make it: run_glue (sequence classification), run_mlm / run_clm (language modelling),
// run_ner (token classification), run_qa (question answering) and run_summarization /
// run_translation (sequence to sequence). For each split: its
// batches, and the evaluation task that turns the model's outputs on them into metrics and
// prediction files. Training also fixes the labels the model's head is made with.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/batch_maker.h"
#include "models/config.h"
#include "tokenizers/tokenizer.h"
#include "train/eval_task.h"
#include "train/training_args.h"

namespace strata::cli {

enum class Mode { Train, Evaluate, Predict };

struct Split {
  std::shared_ptr<const data::BatchMaker> batches;  // null: the job has no such split
  std::unique_ptr<EvalTask> eval;                   // null: the Trainer's default for the model
  bool labelled = false;
};

struct JobData {
  Split train, validation, test;
  // Tokenizers the batch makers encode with on the loader's threads (one per encoder: an
  // encoder sets its tokenizer's truncation).
  std::vector<std::unique_ptr<tok::Tokenizer>> tokenizers;
};

// Reads, checks and prepares every split the arguments and mode ask for. `cfg` is the
// model's configuration with its task resolved; for training it gets the labels the data
// defines (classes, tags), for evaluate / predict its labels read the data.
// `model` gives the model being trained, for evaluations that run it themselves (sequence to
// sequence with predict_with_generate); it is called only once evaluation starts.
JobData load_job_data(const TrainingArguments& a, Mode mode, ModelConfig& cfg,
                      std::function<const Model<float>&()> model = {});

}  // namespace strata::cli
