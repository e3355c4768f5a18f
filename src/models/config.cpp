#include "models/config.h"

#include <cstdint>
#include <filesystem>

#include "io/files.h"
#include "io/model_files.h"
#include "models/architecture.h"
#include "util/error.h"

namespace strata {

namespace {

constexpr Task kAllTasks[] = {Task::Base,      Task::SequenceClassification, Task::MaskedLM,
                              Task::CausalLM,  Task::QuestionAnswering,      Task::TokenClassification,
                              Task::PreTraining, Task::Seq2SeqLM};

Task task_from_architectures(const nlohmann::json& j, const Architecture& a, const std::string& src) {
  auto it = j.find("architectures");
  if (it == j.end() || !it->is_array() || it->empty()) return Task::Base;
  const std::string arch = (*it)[0].is_string() ? (*it)[0].get<std::string>() : "";
  std::string known;
  for (const auto& [task, suffix] : a.classes) {
    const std::string name = std::string(a.class_prefix) + suffix;
    if (arch == name) return task;
    known += (known.empty() ? "" : ", ") + name;
  }
  fail(src, ": architectures[0] is '", arch, "'; strata supports ", known);
}

int count_labels(const nlohmann::json& j, const std::string& src) {
  auto it = j.find("id2label");
  if (it != j.end() && it->is_object() && !it->empty()) return static_cast<int>(it->size());
  auto n = j.find("num_labels");
  if (n != j.end() && n->is_number_integer() && n->get<int>() > 0) return n->get<int>();
  return 2;  // PretrainedConfig's default
}

}  // namespace

ProblemType parse_problem_type(const std::string& s, const std::string& src) {
  if (s.empty()) return ProblemType::Unset;
  if (s == "single_label_classification") return ProblemType::SingleLabel;
  if (s == "multi_label_classification") return ProblemType::MultiLabel;
  if (s == "regression") return ProblemType::Regression;
  fail(src, ": field 'problem_type' is '", s,
       "'; expected single_label_classification, multi_label_classification or regression");
}

const char* problem_type_name(ProblemType p) {
  switch (p) {
    case ProblemType::SingleLabel: return "single_label_classification";
    case ProblemType::MultiLabel: return "multi_label_classification";
    case ProblemType::Regression: return "regression";
    case ProblemType::Unset: return "";
  }
  return "";
}

const char* task_name(Task t) {
  switch (t) {
    case Task::Base: return "base";
    case Task::SequenceClassification: return "sequence-classification";
    case Task::MaskedLM: return "masked-lm";
    case Task::CausalLM: return "causal-lm";
    case Task::QuestionAnswering: return "question-answering";
    case Task::TokenClassification: return "token-classification";
    case Task::PreTraining: return "pretraining";
    case Task::Seq2SeqLM: return "seq2seq-lm";
  }
  return "";
}

bool per_token_labels(Task t) {
  return t == Task::MaskedLM || t == Task::CausalLM || t == Task::TokenClassification || t == Task::PreTraining;
}

bool vocab_logits(Task t) { return t == Task::MaskedLM || t == Task::CausalLM || t == Task::Seq2SeqLM; }

bool parse_task(const std::string& s, Task* out) {
  for (Task t : kAllTasks)
    if (s == task_name(t)) {
      *out = t;
      return true;
    }
  return false;
}

std::string ModelConfig::architecture() const {
  const Architecture* a = find_architecture(model_type);
  const char* suffix = a ? a->class_suffix(task) : nullptr;
  return suffix ? std::string(a->class_prefix) + suffix : "";
}

std::string ModelConfig::base_prefix() const {
  const Architecture* a = find_architecture(model_type);
  return a ? a->base_prefix : "";
}

nlohmann::json ModelConfig::to_json() const {
  nlohmann::json j = raw;
  j["architectures"] = nlohmann::json::array({architecture()});
  if (problem_type != ProblemType::Unset) j["problem_type"] = problem_type_name(problem_type);
  return j;
}

void ModelConfig::set_labels(const std::vector<std::string>& names) {
  num_labels = static_cast<int>(names.size());
  nlohmann::json id2label = nlohmann::json::object(), label2id = nlohmann::json::object();
  for (size_t i = 0; i < names.size(); ++i) {
    id2label[std::to_string(i)] = names[i];
    label2id[names[i]] = i;
  }
  raw["id2label"] = id2label;
  raw["label2id"] = label2id;
}

std::vector<std::string> ModelConfig::label_names() const {
  std::vector<std::string> out;
  auto it = raw.find("id2label");
  for (int i = 0; i < num_labels; ++i) {
    std::string name = "LABEL_" + std::to_string(i);
    if (it != raw.end() && it->is_object()) {
      auto n = it->find(std::to_string(i));
      if (n != it->end() && n->is_string()) name = n->get<std::string>();
    }
    out.push_back(name);
  }
  return out;
}

ModelConfig parse_model_config(const nlohmann::json& j, const std::string& src, const Task* task_override) {
  if (!j.is_object()) fail(src, ": expected a JSON object");
  auto mt = j.find("model_type");
  if (mt == j.end() || !mt->is_string()) fail(src, ": field 'model_type' is missing or not a string");
  ModelConfig c;
  c.model_type = mt->get<std::string>();
  const Architecture* arch = find_architecture(c.model_type);
  if (!arch) {
    std::string known;
    for (const Architecture* a : all_architectures()) known += (known.empty() ? "" : ", ") + std::string(a->model_type);
    fail(src, ": model_type '", c.model_type, "' is not supported; expected one of ", known);
  }
  c.task = task_override ? *task_override : task_from_architectures(j, *arch, src);
  if (!arch->class_suffix(c.task))
    fail(src, ": model_type '", c.model_type, "' has no ", task_name(c.task), " head in strata");
  c.raw = j;

  const ConfigFields f(j, src, c.model_type);
  c.vocab_size = f.required_int("vocab_size");
  c.initializer_range = f.num_or("initializer_range", 0.02);
  arch->parse(f, c);
  if (c.embedding_size == 0) c.embedding_size = c.hidden_size;
  if (!kernels::parse_activation(c.hidden_act.c_str(), &c.act))
    fail(src, ": activation '", c.hidden_act,
         "' is not supported; expected gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, relu, silu, swish or tanh");
  if (c.head_width == 0 && c.hidden_size % c.num_heads != 0)
    fail(src, ": hidden size ", c.hidden_size, " is not divisible by the number of heads ", c.num_heads);
  if (c.pad_token_id < -1 || c.pad_token_id >= c.vocab_size)
    fail(src, ": pad_token_id ", c.pad_token_id, " is outside the vocabulary [0, ", c.vocab_size, ")");
  c.num_labels = count_labels(j, src);
  c.problem_type = parse_problem_type(f.str_or("problem_type", ""), src);
  return c;
}

ModelConfig load_model_config(const std::string& model_dir, const Task* task_override) {
  const std::string dir = io::hf_model_dir(model_dir);
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  if (!std::filesystem::exists(path)) fail(dir, ": no config.json in this directory");
  return parse_model_config(io::read_json_file(path), path, task_override);
}

}  // namespace strata
