#include "train/eval_task.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "kernels/ops.h"
#include "models/batch_checks.h"
#include "tensor/device_array.h"
#include "train/metrics.h"
#include "train/predictions.h"
#include "util/error.h"

namespace strata {

std::string pack(const nlohmann::json& j) {
  const std::vector<uint8_t> packed = nlohmann::json::to_msgpack(j);
  return std::string(packed.begin(), packed.end());
}

nlohmann::json unpack(const std::string& bytes) { return nlohmann::json::from_msgpack(bytes); }

PredictionArrays EvalPass::arrays() const {
  fail("compute_metrics and prediction arrays are available for sequence and token classification; this task reports "
       "its own metrics (eval_loss and the task's metrics) and writes its predictions to files (docs/python.md)");
}

namespace {

int argmax(const float* x, int n) { return static_cast<int>(std::max_element(x, x + n) - x); }

void put(nlohmann::json& out, const std::string& prefix, const std::map<std::string, double>& m) {
  for (const auto& [k, v] : m) out[prefix + "_" + k] = v;
}

// Sequence classification: every row's logits and targets, by dataset index.
class ClassificationPass final : public EvalPass {
 public:
  ClassificationPass(const ModelConfig& cfg, std::string format, std::string task_name)
      : cfg_(cfg), format_(std::move(format)), task_name_(std::move(task_name)) {}

  void add(const Batch& b, const std::vector<HeadOutput<float>>& outputs) override {
    const int L = cfg_.num_labels;
    const float* logits = outputs.at(0).data;
    if (problem_ == ProblemType::Unset) problem_ = resolve_problem_type(cfg_, b);
    for (int i = 0; i < b.B; ++i) {
      Prediction p;
      p.index = b.example_ids.empty() ? rows_.size() : b.example_ids[i];
      p.logits.assign(logits + static_cast<size_t>(i) * L, logits + static_cast<size_t>(i + 1) * L);
      if (!b.labels.empty()) p.label = b.labels[i];
      if (!b.float_labels.empty())
        p.target.assign(b.float_labels.begin() + static_cast<ptrdiff_t>(i) * L,
                        b.float_labels.begin() + static_cast<ptrdiff_t>(i + 1) * L);
      rows_.push_back(std::move(p));
    }
  }

  std::string serialize() const override {
    nlohmann::json rows = nlohmann::json::array();
    for (const Prediction& p : rows_) rows.push_back({p.index, p.logits, p.label, p.target});
    return pack({{"problem", static_cast<int>(problem_)}, {"rows", rows}});
  }

  void merge(const std::string& bytes) override {
    const nlohmann::json j = unpack(bytes);
    if (problem_ == ProblemType::Unset) problem_ = static_cast<ProblemType>(j["problem"].get<int>());
    for (const auto& e : j["rows"])
      rows_.push_back({e[0].get<size_t>(), e[1].get<std::vector<float>>(), e[2].get<int32_t>(),
                       e[3].get<std::vector<double>>()});
  }

  void metrics(const std::string& prefix, double loss, nlohmann::json& out) const override {
    if (!std::isnan(loss)) out[prefix + "_loss"] = loss;
    const int L = cfg_.num_labels;
    std::vector<int> pred, label;
    std::vector<double> value, target;
    for (const Prediction& p : rows_) {
      switch (problem_) {
        case ProblemType::SingleLabel:
          if (p.label >= 0) {
            pred.push_back(argmax(p.logits.data(), L));
            label.push_back(p.label);
          }
          break;
        case ProblemType::MultiLabel:
          for (size_t j = 0; j < p.target.size(); ++j) {  // logit > 0 <=> sigmoid > 0.5
            pred.push_back(p.logits[j] > 0.0f);
            label.push_back(p.target[j] > 0.5);
          }
          break;
        case ProblemType::Regression:
          for (size_t j = 0; j < p.target.size(); ++j) {
            value.push_back(p.logits[j]);
            target.push_back(p.target[j]);
          }
          break;
        case ProblemType::Unset: break;
      }
    }
    if (!pred.empty() && problem_ == ProblemType::SingleLabel) put(out, prefix, to_map(compute_classification(pred, label, L)));
    if (!pred.empty() && problem_ == ProblemType::MultiLabel) put(out, prefix, to_map(compute_multilabel(pred, label, L)));
    if (!value.empty()) put(out, prefix, to_map(compute_regression(value, target)));
  }

  std::string write_predictions(const std::string& dir, const std::string& prefix) const override {
    const std::vector<Prediction> sorted = in_dataset_order();
    // run_glue: predict_results_<task_name>.txt; run_classification: predict_results.txt
    const std::string name = prefix + "_results" + (task_name_.empty() ? "" : "_" + task_name_) + "." + format_;
    const std::string path = (std::filesystem::path(dir) / name).string();
    const ProblemType problem = problem_ == ProblemType::Unset ? ProblemType::SingleLabel : problem_;
    strata::write_predictions(path, format_, sorted, cfg_.label_names(), problem);
    return path;
  }

  // Logits [N, num_labels]; labels [N] (single-label, -100 where unknown) or [N, num_labels].
  PredictionArrays arrays() const override {
    const std::vector<Prediction> sorted = in_dataset_order();
    const int64_t N = static_cast<int64_t>(sorted.size()), L = cfg_.num_labels;
    PredictionArrays a;
    a.predictions_shape = {N, L};
    a.predictions.reserve(static_cast<size_t>(N * L));
    bool any_label = false;
    for (const Prediction& p : sorted) {
      a.predictions.insert(a.predictions.end(), p.logits.begin(), p.logits.end());
      any_label = any_label || p.label >= 0 || !p.target.empty();
    }
    if (!any_label) return a;
    if (problem_ == ProblemType::SingleLabel || problem_ == ProblemType::Unset) {
      a.labels_shape = {N};
      for (const Prediction& p : sorted) a.int_labels.push_back(p.label >= 0 ? p.label : -100);
    } else {
      a.labels_shape = {N, L};
      for (const Prediction& p : sorted) {
        if (static_cast<int64_t>(p.target.size()) != L) fail("an example without labels among labelled ones");
        a.float_labels.insert(a.float_labels.end(), p.target.begin(), p.target.end());
      }
    }
    return a;
  }

 private:
  std::vector<Prediction> in_dataset_order() const {
    std::vector<Prediction> sorted = rows_;
    std::sort(sorted.begin(), sorted.end(), [](const Prediction& x, const Prediction& y) { return x.index < y.index; });
    return sorted;
  }

  const ModelConfig cfg_;
  const std::string format_, task_name_;
  ProblemType problem_ = ProblemType::Unset;
  std::vector<Prediction> rows_;
};

// Masked and causal LM (run_mlm / run_clm's compute_metrics): the argmax token at every
// labelled position (for causal LM the logits at t predict the label at t + 1) against the
// label; perplexity = exp(loss).
class LanguageModelPass final : public EvalPass {
 public:
  explicit LanguageModelPass(const ModelConfig& cfg) : cfg_(cfg) {}

  void add(const Batch& b, const std::vector<HeadOutput<float>>& outputs) override {
    if (b.labels.empty()) return;
    const float* logits = outputs.at(0).data;  // [B, T, V]
    const int V = cfg_.vocab_size;
    const int shift = cfg_.task == Task::CausalLM ? 1 : 0;
    // Only the argmax ids leave the logits' device.
    const size_t n = static_cast<size_t>(b.B) * b.T;
    kernels::argmax_rows(logits, b.B * b.T, V, predicted_.on_device(n));
    const int32_t* predicted = predicted_.on_host();
    for (int r = 0; r < b.B; ++r)
      for (int t = 0; t + shift < b.T; ++t) {
        const size_t at = static_cast<size_t>(r) * b.T + t;
        const int32_t label = b.labels[at + shift];
        if (label == -100) continue;
        ++counted_;
        hits_ += predicted[at] == label;
      }
  }

  std::string serialize() const override { return pack({hits_, counted_}); }
  void merge(const std::string& bytes) override {
    const nlohmann::json j = unpack(bytes);
    hits_ += j[0].get<size_t>();
    counted_ += j[1].get<size_t>();
  }

  void metrics(const std::string& prefix, double loss, nlohmann::json& out) const override {
    if (std::isnan(loss)) return;
    out[prefix + "_loss"] = loss;
    out[prefix + "_perplexity"] = perplexity(loss);
    out[prefix + "_accuracy"] = counted_ ? static_cast<double>(hits_) / counted_ : 0.0;
  }

  bool reads_device_outputs() const override { return true; }

  std::string write_predictions(const std::string&, const std::string&) const override {
    fail("language models write no predictions: evaluate reports their perplexity, and strata generate samples text");
  }

 private:
  const ModelConfig cfg_;
  size_t hits_ = 0, counted_ = 0;
  DeviceResult<int32_t> predicted_;  // [B, T] of the batch being added
};

class DefaultTask final : public EvalTask {
 public:
  DefaultTask(const ModelConfig& cfg, std::string format, std::string task_name)
      : cfg_(cfg), format_(std::move(format)), task_name_(std::move(task_name)) {}
  std::unique_ptr<EvalPass> start() const override {
    if (cfg_.task == Task::SequenceClassification)
      return std::make_unique<ClassificationPass>(cfg_, format_, task_name_);
    return std::make_unique<LanguageModelPass>(cfg_);
  }

 private:
  const ModelConfig cfg_;
  const std::string format_, task_name_;
};

}  // namespace

std::unique_ptr<EvalTask> default_eval_task(const ModelConfig& cfg, const std::string& predict_format,
                                            const std::string& glue_task) {
  switch (cfg.task) {
    case Task::SequenceClassification:
    case Task::MaskedLM:
    case Task::CausalLM: return std::make_unique<DefaultTask>(cfg, predict_format, glue_task);
    default:
      fail("the ", task_name(cfg.task), " task has no evaluation without its data (question answering: the examples "
           "and features; token classification: the tag names)");
  }
}

}  // namespace strata
