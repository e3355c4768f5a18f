#include "models/config.h"

#include <cstdint>
#include <filesystem>

#include "io/files.h"
#include "util/error.h"

namespace strata {

namespace {

struct FamilyInfo {
  const char* model_type;
  Family family;
  const char* class_prefix;  // "Bert" -> BertForMaskedLM
  const char* base_prefix;
};
constexpr FamilyInfo kFamilies[] = {
    {"bert", Family::Bert, "Bert", "bert."},
    {"roberta", Family::Roberta, "Roberta", "roberta."},
    {"distilbert", Family::DistilBert, "DistilBert", "distilbert."},
};

const FamilyInfo& info(Family f) {
  for (const auto& i : kFamilies)
    if (i.family == f) return i;
  return kFamilies[0];
}

struct TaskSuffix {
  Task task;
  const char* suffix;
};
constexpr TaskSuffix kTaskSuffixes[] = {
    {Task::Base, "Model"},
    {Task::SequenceClassification, "ForSequenceClassification"},
    {Task::MaskedLM, "ForMaskedLM"},
};

// Typed field access with errors that name the file and field.
class Fields {
 public:
  Fields(const nlohmann::json& j, const std::string& source, const std::string& model_type)
      : j_(j), src_(source), type_(model_type) {}

  int required_int(const char* key) const {
    const auto* v = get(key);
    if (!v) fail(src_, ": field '", key, "' is missing (model_type '", type_, "' needs it)");
    if (!v->is_number_integer() || v->get<long long>() <= 0 || v->get<long long>() > INT32_MAX)
      fail(src_, ": field '", key, "' must be a positive integer below 2^31, got ", v->dump());
    return v->get<int>();
  }
  int int_or(const char* key, int dflt) const {
    const auto* v = get(key);
    if (!v || v->is_null()) return dflt;
    if (!v->is_number_integer() || v->get<long long>() < INT32_MIN || v->get<long long>() > INT32_MAX)
      fail(src_, ": field '", key, "' must be a 32-bit integer, got ", v->dump());
    return v->get<int>();
  }
  double num_or(const char* key, double dflt) const {
    const auto* v = get(key);
    if (!v || v->is_null()) return dflt;
    if (!v->is_number()) fail(src_, ": field '", key, "' must be a number, got ", v->dump());
    return v->get<double>();
  }
  std::string str_or(const char* key, const std::string& dflt) const {
    const auto* v = get(key);
    if (!v || v->is_null()) return dflt;
    if (!v->is_string()) fail(src_, ": field '", key, "' must be a string, got ", v->dump());
    return v->get<std::string>();
  }
  bool bool_or(const char* key, bool dflt) const {
    const auto* v = get(key);
    if (!v || v->is_null()) return dflt;
    if (!v->is_boolean()) fail(src_, ": field '", key, "' must be true or false, got ", v->dump());
    return v->get<bool>();
  }

 private:
  const nlohmann::json* get(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  const nlohmann::json& j_;
  const std::string& src_;
  const std::string& type_;
};

Task task_from_architectures(const nlohmann::json& j, const FamilyInfo& fi, const std::string& src) {
  auto it = j.find("architectures");
  if (it == j.end() || !it->is_array() || it->empty()) return Task::Base;
  const std::string arch = (*it)[0].is_string() ? (*it)[0].get<std::string>() : "";
  for (const auto& ts : kTaskSuffixes)
    if (arch == std::string(fi.class_prefix) + ts.suffix) return ts.task;
  fail(src, ": architectures[0] is '", arch, "'; strata supports ", fi.class_prefix, "Model, ",
       fi.class_prefix, "ForSequenceClassification and ", fi.class_prefix, "ForMaskedLM");
}

int count_labels(const nlohmann::json& j, const std::string& src) {
  auto it = j.find("id2label");
  if (it != j.end() && it->is_object() && !it->empty()) return static_cast<int>(it->size());
  auto n = j.find("num_labels");
  if (n != j.end() && n->is_number_integer() && n->get<int>() > 0) return n->get<int>();
  return 2;  // PretrainedConfig's default
}

ProblemType parse_problem_type(const std::string& s, const std::string& src) {
  if (s.empty()) return ProblemType::Unset;
  if (s == "single_label_classification") return ProblemType::SingleLabel;
  if (s == "multi_label_classification") return ProblemType::MultiLabel;
  if (s == "regression") return ProblemType::Regression;
  fail(src, ": field 'problem_type' is '", s,
       "'; expected single_label_classification, multi_label_classification or regression");
}

}  // namespace

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
  }
  return "";
}

bool parse_task(const std::string& s, Task* out) {
  for (Task t : {Task::Base, Task::SequenceClassification, Task::MaskedLM})
    if (s == task_name(t)) {
      *out = t;
      return true;
    }
  return false;
}

std::string ModelConfig::architecture() const {
  for (const auto& ts : kTaskSuffixes)
    if (ts.task == task) return std::string(info(family).class_prefix) + ts.suffix;
  return "";
}

std::string ModelConfig::base_prefix() const { return info(family).base_prefix; }

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
  const FamilyInfo* fi = nullptr;
  for (const auto& i : kFamilies)
    if (c.model_type == i.model_type) fi = &i;
  if (!fi) fail(src, ": model_type '", c.model_type, "' is not supported; expected one of bert, roberta, distilbert");
  c.family = fi->family;
  c.task = task_override ? *task_override : task_from_architectures(j, *fi, src);
  c.raw = j;

  const Fields f(j, src, c.model_type);
  c.vocab_size = f.required_int("vocab_size");
  c.max_position_embeddings = f.required_int("max_position_embeddings");
  c.initializer_range = f.num_or("initializer_range", 0.02);
  if (c.family == Family::DistilBert) {
    c.hidden_size = f.required_int("dim");
    c.num_layers = f.required_int("n_layers");
    c.num_heads = f.required_int("n_heads");
    c.intermediate_size = f.required_int("hidden_dim");
    c.hidden_act = f.str_or("activation", "gelu");
    c.hidden_dropout = static_cast<float>(f.num_or("dropout", 0.1));
    c.attention_dropout = static_cast<float>(f.num_or("attention_dropout", 0.1));
    c.classifier_dropout = static_cast<float>(f.num_or("seq_classif_dropout", 0.2));
    c.type_vocab_size = 0;
    c.layer_norm_eps = 1e-12;  // hard-coded in HF's DistilBERT
    c.pad_token_id = f.int_or("pad_token_id", 0);
    if (f.bool_or("sinusoidal_pos_embds", false))
      fail(src, ": sinusoidal_pos_embds = true is not supported (learned position embeddings only)");
  } else {
    c.hidden_size = f.required_int("hidden_size");
    c.num_layers = f.required_int("num_hidden_layers");
    c.num_heads = f.required_int("num_attention_heads");
    c.intermediate_size = f.required_int("intermediate_size");
    c.hidden_act = f.str_or("hidden_act", "gelu");
    c.hidden_dropout = static_cast<float>(f.num_or("hidden_dropout_prob", 0.1));
    c.attention_dropout = static_cast<float>(f.num_or("attention_probs_dropout_prob", 0.1));
    c.classifier_dropout = static_cast<float>(f.num_or("classifier_dropout", c.hidden_dropout));
    c.type_vocab_size = f.int_or("type_vocab_size", 2);
    c.layer_norm_eps = f.num_or("layer_norm_eps", 1e-12);
    c.pad_token_id = f.int_or("pad_token_id", c.family == Family::Roberta ? 1 : 0);
    const std::string pe = f.str_or("position_embedding_type", "absolute");
    if (pe != "absolute")
      fail(src, ": position_embedding_type '", pe, "' is not supported (only 'absolute')");
    if (f.bool_or("is_decoder", false) || f.bool_or("add_cross_attention", false))
      fail(src, ": decoder / cross-attention configurations are not supported (is_decoder must be false)");
    if (c.type_vocab_size < 1) fail(src, ": field 'type_vocab_size' must be >= 1");
  }
  if (!kernels::parse_activation(c.hidden_act.c_str(), &c.act))
    fail(src, ": activation '", c.hidden_act,
         "' is not supported; expected gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, relu, silu, swish or tanh");
  if (c.hidden_size % c.num_heads != 0)
    fail(src, ": hidden size ", c.hidden_size, " is not divisible by the number of heads ", c.num_heads);
  if (c.pad_token_id < 0 || c.pad_token_id >= c.vocab_size)
    fail(src, ": pad_token_id ", c.pad_token_id, " is outside the vocabulary [0, ", c.vocab_size, ")");
  if (c.family == Family::Roberta && c.max_position_embeddings <= c.pad_token_id + 1)
    fail(src, ": max_position_embeddings must exceed pad_token_id + 1 for RoBERTa position ids");
  c.num_labels = count_labels(j, src);
  c.problem_type = parse_problem_type(f.str_or("problem_type", ""), src);
  return c;
}

ModelConfig load_model_config(const std::string& dir, const Task* task_override) {
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  if (!std::filesystem::exists(path)) fail(dir, ": no config.json in this directory");
  return parse_model_config(io::read_json_file(path), path, task_override);
}

}  // namespace strata
