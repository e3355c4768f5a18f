// The README.md model card that HF's Trainer.create_model_card writes next to the saved
// model (transformers v4.36's TrainingSummary, as the example scripts call it): YAML metadata
// (base_model, tags, datasets, metrics, model-index), the final evaluation results, the
// hyperparameters, the table of evaluations during training, and framework versions. Built
// from the log history the way HF's parse_log_history reads it, so HF's own summary of the
// same history gives the same card; two sections are strata's: "Training and evaluation data"
// names the data files (HF writes "More information needed"), and "Framework versions" names
// strata.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/training_args.h"

namespace strata {

struct ModelCardInfo {
  std::string model_name;      // HF: the last component of output_dir
  std::string finetuned_from;  // the model trained from ("" when it was initialised from a config)
  std::string task_tag;        // HF's task tag: text-classification, fill-mask, text-generation, ...
  // run_glue with a task_name: "GLUE MRPC", "glue", "mrpc"; otherwise empty.
  std::string dataset, dataset_tag, dataset_args;
  std::vector<std::string> data_lines;  // "train_file: PATH (N examples)", ... for the data section
  int world_size = 1;
};

std::string make_model_card(const ModelCardInfo& info, const TrainingArguments& args, const nlohmann::json& log_history);

}  // namespace strata
