// A model's config.json, read with the field names of its HF model_type and normalised to
// one set of names. The original JSON is kept so that saving writes back every field HF
// wrote (plus what strata changed), and HF's from_pretrained reads it unchanged.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/problem_type.h"
#include "kernels/ops.h"

namespace strata {

enum class Family { Bert, Roberta, DistilBert };
enum class Task { Base, SequenceClassification, MaskedLM };

struct ModelConfig {
  std::string model_type;  // "bert" | "roberta" | "distilbert"
  Family family;
  Task task;
  int vocab_size, hidden_size, num_layers, num_heads, intermediate_size;
  int max_position_embeddings, type_vocab_size;  // type_vocab_size 0: no token types
  int pad_token_id;
  double layer_norm_eps;
  std::string hidden_act;
  kernels::Activation act;
  float hidden_dropout, attention_dropout, classifier_dropout;
  double initializer_range;
  int num_labels;
  ProblemType problem_type;
  nlohmann::json raw;

  int head_size() const { return hidden_size / num_heads; }
  // HF class name for this family and task, e.g. "BertForSequenceClassification".
  std::string architecture() const;
  // The name prefix of the base model's parameters inside a task model ("bert.", "roberta.", "distilbert.").
  std::string base_prefix() const;
  nlohmann::json to_json() const;  // raw, with architectures / problem_type brought up to date
  // Sets num_labels and HF's id2label / label2id (written into config.json on save).
  void set_labels(const std::vector<std::string>& names);
  std::vector<std::string> label_names() const;  // id2label in id order ("LABEL_i" where unnamed)
};

// Reads and checks a config.json. `source` names the file in error messages. The task comes
// from "architectures"; `task_override` (if not null) replaces it, as when a base checkpoint
// is loaded into a task model.
ModelConfig parse_model_config(const nlohmann::json& j, const std::string& source,
                               const Task* task_override = nullptr);
ModelConfig load_model_config(const std::string& dir, const Task* task_override = nullptr);

const char* problem_type_name(ProblemType p);  // HF spelling, "" for Unset
const char* task_name(Task t);                 // "base" | "sequence-classification" | "masked-lm"
bool parse_task(const std::string& s, Task* out);

}  // namespace strata
