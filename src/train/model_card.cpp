#include "train/model_card.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <utility>

#include "io/python_json.h"
#include "util/error.h"

namespace strata {

namespace {

using json = nlohmann::json;
using Row = std::vector<std::pair<std::string, json>>;  // a Python dict: keys in insertion order

// str(value) in Python for a value of json.load: floats as Python's repr writes them
// (io::python_float: shortest round trip, "1e-05", "3.0"), and the non-finite ones JSON cannot
// store.
std::string py_str(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "None";
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    return io::python_float(d);
  }
  return v.dump();
}

// modelcard.py's _maybe_round: floats with more than 4 digits after the point to 4 decimals.
std::string maybe_round(const json& v) {
  const std::string s = py_str(v);
  if (!v.is_number_float()) return s;
  const size_t dot = s.find('.');
  if (dot == std::string::npos) return s;
  const size_t next = s.find('.', dot + 1);
  const size_t decimals = (next == std::string::npos ? s.size() : next) - dot - 1;
  if (decimals <= 4) return s;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4f", v.get<double>());
  return buf;
}

// " ".join(part.capitalize() for part in key.split("_")[skip:])
std::string capitalized(const std::string& key, size_t skip) {
  std::string out;
  size_t part = 0;
  for (size_t at = 0; at <= key.size(); ++part) {
    const size_t end = std::min(key.find('_', at), key.size());
    if (part >= skip) {
      if (part > skip) out += ' ';
      for (size_t i = at; i < end; ++i) {
        const auto c = static_cast<unsigned char>(key[i]);
        out += static_cast<char>(i == at ? std::toupper(c) : std::tolower(c));
      }
    }
    at = end + 1;
  }
  return out;
}

const json* find(const Row& row, const std::string& key) {
  for (const auto& [k, v] : row)
    if (k == key) return &v;
  return nullptr;
}

// modelcard.py's parse_log_history: the evaluations during training (lines of the results
// table, with the training loss logged before each) and the last evaluation's metrics.
struct History {
  bool trained = false;  // a train_runtime entry exists; else no lines and no results
  std::vector<Row> lines;
  Row eval_results;
};

History parse_log_history(const json& log) {
  History h;
  size_t idx = 0;
  while (idx < log.size() && !log[idx].contains("train_runtime")) ++idx;
  if (idx == log.size()) return h;
  h.trained = true;
  json training_loss = "No log";
  for (size_t i = 0; i < idx; ++i) {
    const json& e = log[i];
    if (e.contains("loss")) training_loss = e["loss"];
    if (!e.contains("eval_loss")) continue;
    Row line = {{"Training Loss", training_loss}, {"Epoch", e.value("epoch", json())}, {"Step", e.value("step", json())}};
    for (const auto& [k, v] : e.items()) {
      if (k == "total_flos" || k == "epoch" || k == "step" || k == "eval_runtime" || k == "eval_samples_per_second" ||
          k == "eval_steps_per_second" || k == "eval_jit_compilation_time")
        continue;
      line.emplace_back(k == "eval_loss" ? std::string("Validation Loss") : capitalized(k, 1), v);
    }
    h.lines.push_back(std::move(line));
  }
  // HF looks for the last evaluation from the end and, as it does, never takes entry 0.
  size_t last = log.size();
  while (last > 0 && !log[last - 1].contains("eval_loss")) --last;
  if (last > 1) {
    for (const auto& [k, v] : log[last - 1].items()) {
      const std::string key = k.starts_with("eval_") ? k.substr(5) : k;
      if (key == "runtime" || key == "samples_per_second" || key == "steps_per_second" || key == "epoch" ||
          key == "step")
        continue;
      h.eval_results.emplace_back(capitalized(key, 0), v);
    }
  }
  return h;
}

// modelcard.py's make_markdown_table.
std::string markdown_table(const std::vector<Row>& lines) {
  if (lines.empty()) return "";
  std::vector<size_t> width;
  for (const auto& [k, v] : lines[0]) width.push_back(k.size());
  for (const Row& line : lines)
    for (size_t c = 0; c < line.size() && c < width.size(); ++c) width[c] = std::max(width[c], maybe_round(line[c].second).size());
  auto row = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t c = 0; c < cells.size(); ++c) s += "| " + cells[c] + std::string(width[c] - cells[c].size() + 1, ' ');
    return s + "|\n";
  };
  std::vector<std::string> header;
  for (const auto& [k, v] : lines[0]) header.push_back(k);
  std::string table = row(header);
  for (size_t w : width) table += "|:" + std::string(w, '-') + ":";
  table += "|\n";
  for (const Row& line : lines) {
    std::vector<std::string> cells;
    for (const auto& [k, v] : line) cells.push_back(maybe_round(v));
    table += row(cells);
  }
  return table;
}

// modelcard.py's METRIC_TAGS and infer_metric_tags_from_eval_results: tag -> result name.
std::vector<std::pair<std::string, std::string>> metric_tags(const Row& eval_results) {
  static const char* kTags[] = {"accuracy", "bleu", "f1", "matthews_correlation", "pearsonr", "precision",
                                "recall", "rouge", "sacrebleu", "spearmanr", "wer"};
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, v] : eval_results) {
    std::string tag;
    for (char c : name) tag += c == ' ' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const char* t : kTags)
      if (tag == t) out.emplace_back(tag, name);
    if (tag == "rouge1") out.emplace_back("rouge", name);
  }
  return out;
}

// modelcard.py's TASK_TAG_TO_NAME_MAPPING, for the tasks strata trains.
std::string task_display_name(const std::string& tag) {
  if (tag == "fill-mask") return "Masked Language Modeling";
  if (tag == "question-answering") return "Question Answering";
  if (tag == "text-classification") return "Text Classification";
  if (tag == "text-generation") return "Causal Language Modeling";
  if (tag == "token-classification") return "Token Classification";
  if (tag == "summarization") return "Summarization";
  if (tag == "translation") return "Translation";
  return "";
}

// A string scalar, quoted when YAML would read it plain as something else (a number, a bool,
// null), as PyYAML's dump quotes it. yaml-cpp quotes what cannot be plain at all by itself.
void emit_string(YAML::Emitter& y, const std::string& s) {
  bool quote = s.empty();
  try {
    const YAML::Node plain = YAML::Load(s);
    bool b;
    double d;
    quote = quote || !plain.IsScalar() || plain.Scalar() != s || s == "~" || s == "null" || s == "Null" ||
            s == "NULL" || YAML::convert<bool>::decode(plain, b) || YAML::convert<double>::decode(plain, d);
  } catch (const YAML::Exception&) {
  }
  if (quote) y << YAML::DoubleQuoted;
  y << s;
}

// TrainingSummary.create_metadata, as YAML.
std::string metadata_yaml(const ModelCardInfo& info, const History& h) {
  const auto tags = metric_tags(h.eval_results);
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "library_name" << YAML::Value << "transformers";
  if (!info.finetuned_from.empty()) {
    y << YAML::Key << "base_model" << YAML::Value;
    emit_string(y, info.finetuned_from);
  }
  y << YAML::Key << "tags" << YAML::Value << YAML::BeginSeq << "generated_from_trainer" << YAML::EndSeq;
  if (!info.dataset_tag.empty()) {
    y << YAML::Key << "datasets" << YAML::Value << YAML::BeginSeq;
    emit_string(y, info.dataset_tag);
    y << YAML::EndSeq;
  }
  if (!tags.empty()) {
    y << YAML::Key << "metrics" << YAML::Value << YAML::BeginSeq;
    for (const auto& [tag, name] : tags) y << tag;
    y << YAML::EndSeq;
  }
  y << YAML::Key << "model-index" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "name"
    << YAML::Value;
  emit_string(y, info.model_name);
  // One result per (task, dataset) with its metrics; HF drops a result missing any of the three.
  const std::string task_name = task_display_name(info.task_tag);
  const bool result = !task_name.empty() && !info.dataset_tag.empty() && !tags.empty();
  y << YAML::Key << "results" << YAML::Value;
  if (!result) y << YAML::Flow;  // results: []
  y << YAML::BeginSeq;
  if (result) {
    y << YAML::BeginMap << YAML::Key << "task" << YAML::Value << YAML::BeginMap << YAML::Key << "name"
      << YAML::Value << task_name << YAML::Key << "type" << YAML::Value << info.task_tag << YAML::EndMap;
    y << YAML::Key << "dataset" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value;
    emit_string(y, info.dataset);
    y << YAML::Key << "type" << YAML::Value;
    emit_string(y, info.dataset_tag);
    if (!info.dataset_args.empty()) {
      y << YAML::Key << "args" << YAML::Value;
      emit_string(y, info.dataset_args);
    }
    y << YAML::EndMap << YAML::Key << "metrics" << YAML::Value << YAML::BeginSeq;
    for (const auto& [tag, name] : tags)
      y << YAML::BeginMap << YAML::Key << "name" << YAML::Value << name << YAML::Key << "type" << YAML::Value << tag
        << YAML::Key << "value" << YAML::Value << py_str(*find(h.eval_results, name)) << YAML::EndMap;
    y << YAML::EndSeq << YAML::EndMap;
  }
  y << YAML::EndSeq << YAML::EndMap << YAML::EndSeq << YAML::EndMap;
  return std::string(y.c_str()) + "\n";
}

// str() of a Python float argument (learning rates, epochs, betas).
std::string py_float(double v) { return py_str(json(v)); }

// modelcard.py's extract_hyperparameters_from_trainer, for strata's arguments and optimizers.
std::vector<std::pair<std::string, std::string>> hyperparameters(const TrainingArguments& a, int world_size) {
  std::vector<std::pair<std::string, std::string>> h = {{"learning_rate", py_float(a.learning_rate)},
                                                        {"train_batch_size", std::to_string(a.per_device_train_batch_size)},
                                                        {"eval_batch_size", std::to_string(a.per_device_eval_batch_size)},
                                                        {"seed", std::to_string(a.seed)}};
  if (world_size > 1) {
    h.emplace_back("distributed_type", "multi-process data parallel (MPI)");
    h.emplace_back("num_devices", std::to_string(world_size));
  }
  if (a.gradient_accumulation_steps > 1)
    h.emplace_back("gradient_accumulation_steps", std::to_string(a.gradient_accumulation_steps));
  const int64_t total_train = int64_t{a.per_device_train_batch_size} * world_size * a.gradient_accumulation_steps;
  if (total_train != a.per_device_train_batch_size) h.emplace_back("total_train_batch_size", std::to_string(total_train));
  const int64_t total_eval = int64_t{a.per_device_eval_batch_size} * world_size;
  if (total_eval != a.per_device_eval_batch_size) h.emplace_back("total_eval_batch_size", std::to_string(total_eval));
  // transformers 5's wording; SGD has no optim_args in strata (its momentum is sgd_momentum).
  const std::string no_args = "No additional optimizer arguments";
  h.emplace_back("optimizer", a.optim == "sgd" ? "Use sgd and the args are:\n" + no_args
                                               : "Use " + a.optim + " with betas=(" + py_float(a.adam_beta1) + "," +
                                                     py_float(a.adam_beta2) + ") and epsilon=" +
                                                     py_float(a.adam_epsilon) + " and optimizer_args=" + no_args);
  h.emplace_back("lr_scheduler_type", a.lr_scheduler_type);
  // transformers 5 has warmup_steps only, a ratio below 1: warmup_ratio shows as that ratio, and
  // a whole number of steps as the integer a config gives.
  const double warmup = a.warmup_steps > 0 ? a.warmup_steps : a.warmup_ratio;
  if (warmup != 0)
    h.emplace_back("lr_scheduler_warmup_steps", warmup >= 1 && warmup == std::floor(warmup)
                                                    ? std::to_string(static_cast<int64_t>(warmup))
                                                    : py_float(warmup));
  if (a.max_steps != -1) h.emplace_back("training_steps", std::to_string(a.max_steps));
  else h.emplace_back("num_epochs", py_float(a.num_train_epochs));
  return h;
}

}  // namespace

std::string make_model_card(const ModelCardInfo& info, const TrainingArguments& args, const nlohmann::json& log_history) {
  const History h = parse_log_history(log_history);
  std::string card = "---\n" + metadata_yaml(info, h) + "---\n";
  card +=
      "\n<!-- This model card has been generated automatically according to the information the Trainer had access "
      "to. You\nshould probably proofread and complete it, then remove this comment. -->\n";
  card += "\n# " + info.model_name + "\n\n";
  card += info.finetuned_from.empty() ? "This model was trained from scratch on "
                                      : "This model is a fine-tuned version of [" + info.finetuned_from +
                                            "](https://huggingface.co/" + info.finetuned_from + ") on ";
  card += info.dataset.empty() ? "an unknown dataset." : "the " + info.dataset + " dataset.";
  if (!h.eval_results.empty()) {
    card += "\nIt achieves the following results on the evaluation set:\n";
    for (size_t i = 0; i < h.eval_results.size(); ++i)
      card += (i ? "\n- " : "- ") + h.eval_results[i].first + ": " + maybe_round(h.eval_results[i].second);
  }
  card += "\n";
  card += "\n## Model description\n\nMore information needed\n";
  card += "\n## Intended uses & limitations\n\nMore information needed\n";
  card += "\n## Training and evaluation data\n\n";
  if (info.data_lines.empty()) card += "More information needed\n";
  for (const std::string& line : info.data_lines) card += "- " + line + "\n";
  card += "\n## Training procedure\n";
  card += "\n### Training hyperparameters\n";
  card += "\nThe following hyperparameters were used during training:\n";
  const auto hp = hyperparameters(args, info.world_size);
  for (size_t i = 0; i < hp.size(); ++i) card += (i ? "\n- " : "- ") + hp[i].first + ": " + hp[i].second;
  card += "\n";
  if (h.trained) card += "\n### Training results\n\n" + markdown_table(h.lines) + "\n";
  card += "\n### Framework versions\n\n- strata (C++20 trainer, CPU backend; no PyTorch, Datasets or Tokenizers)\n";
  return card;
}

}  // namespace strata
