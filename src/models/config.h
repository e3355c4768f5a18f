// A model's config.json, read with the field names of its HF model_type (each architecture
// parses its own, see architecture.h) and normalised to one set of names. The original JSON
// is kept so that saving writes back every field HF wrote (plus what strata changed), and
// HF's from_pretrained reads it unchanged.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/problem_type.h"
#include "kernels/ops.h"
#include "models/tensor_split.h"

namespace strata {

// The task heads, as HF's AutoModelFor* classes name them.
enum class Task {
  Base,
  SequenceClassification,
  MaskedLM,
  CausalLM,
  QuestionAnswering,
  TokenClassification,
  PreTraining,  // ALBERT: masked LM + sentence-order prediction
  Seq2SeqLM     // encoder-decoder language modelling (HF's AutoModelForSeq2SeqLM)
};

struct ModelConfig {
  std::string model_type;  // HF model_type: "bert", "roberta", "distilbert", ...
  Task task = Task::Base;
  int vocab_size = 0, hidden_size = 0, num_layers = 0, num_heads = 0, intermediate_size = 0;
  int max_position_embeddings = 0;
  int type_vocab_size = 0;  // 0: no token types
  // First position id of a sequence: RoBERTa counts positions from pad_token_id + 1.
  int position_offset = 0;
  int pad_token_id = 0;  // -1: none (GPT-2 without pad_token_id)
  double layer_norm_eps = 1e-12;
  std::string hidden_act;
  kernels::Activation act = kernels::Activation::GeluErf;
  float hidden_dropout = 0, attention_dropout = 0, classifier_dropout = 0;
  double initializer_range = 0.02;
  int num_labels = 2;
  ProblemType problem_type = ProblemType::Unset;
  // ---- fields some architectures have ----
  int embedding_size = 0;  // ALBERT's factorised embedding width (= hidden_size elsewhere)
  int num_hidden_groups = 1, inner_group_num = 1;  // ALBERT's shared layer groups
  float embedding_dropout = 0;                     // GPT-2 embd_pdrop (BERT family: hidden_dropout)
  bool scale_attn_weights = true;                  // GPT-2: divide scores by sqrt(head size)
  int head_width = 0;  // T5's d_kv: heads of their own width (0: hidden_size / num_heads, which must divide)
  int decoder_layers = 0;  // an encoder-decoder's decoder blocks (num_layers: its encoder's)
  nlohmann::json raw;
  // Not from config.json: the job's tensor-parallel split, which the model's table is built
  // for (models/tensor_split.h). Saving writes the unsplit model.
  TensorSplit tensor_split;

  int head_size() const { return head_width > 0 ? head_width : hidden_size / num_heads; }
  // HF class name for this model_type and task, e.g. "BertForSequenceClassification".
  std::string architecture() const;
  // The name prefix of the base model's parameters inside a task model ("bert.", "roberta.", ...).
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
// The HF spelling back ("" is Unset); anything else is an error naming `src`.
ProblemType parse_problem_type(const std::string& s, const std::string& src);
// "base" | "sequence-classification" | "masked-lm" | "causal-lm" | "question-answering" |
// "token-classification" | "pretraining"
const char* task_name(Task t);
bool parse_task(const std::string& s, Task* out);
// Whether the task's labels are one per position ([B*T]) rather than one per sequence.
bool per_token_labels(Task t);
// Whether the head's outputs are logits over the vocabulary, one row per (decoder) position.
bool vocab_logits(Task t);

}  // namespace strata
