#include "train/evaluation.h"

#include <algorithm>
#include <cmath>

#include "train/metrics.h"

namespace strata {

namespace {
int argmax(const float* x, int n) { return static_cast<int>(std::max_element(x, x + n) - x); }
}  // namespace

void EvalAccumulator::add(const Batch& b, const float* logits, double loss_sum, double norm) {
  loss_sum_ += loss_sum;
  norm_ += norm;
  if (cfg_.task == Task::MaskedLM) {
    for (size_t i = 0; i < b.labels.size(); ++i) {
      if (b.labels[i] == -100) continue;
      pred_.push_back(argmax(logits + i * cfg_.vocab_size, cfg_.vocab_size));
      label_.push_back(b.labels[i]);
    }
    return;
  }
  const int L = cfg_.num_labels;
  problem_ = resolve_problem_type(cfg_, b);
  for (int r = 0; r < b.B; ++r) {
    const float* row = logits + static_cast<size_t>(r) * L;
    switch (problem_) {
      case ProblemType::SingleLabel:
        if (!b.labels.empty() && b.labels[r] != -100) {
          pred_.push_back(argmax(row, L));
          label_.push_back(b.labels[r]);
        }
        break;
      case ProblemType::MultiLabel:
        for (int j = 0; j < L; ++j) {  // logit > 0 <=> sigmoid > 0.5
          pred_.push_back(row[j] > 0.0f);
          label_.push_back(b.float_labels[static_cast<size_t>(r) * L + j] > 0.5);
        }
        break;
      case ProblemType::Regression:
        for (int j = 0; j < L; ++j) {
          pred_value_.push_back(row[j]);
          target_.push_back(b.float_labels[static_cast<size_t>(r) * L + j]);
        }
        break;
      case ProblemType::Unset: break;
    }
  }
}

std::string EvalAccumulator::serialize() const {
  const nlohmann::json j = {{"problem", static_cast<int>(problem_)}, {"loss_sum", loss_sum_}, {"norm", norm_},
                            {"pred", pred_}, {"label", label_}, {"value", pred_value_}, {"target", target_}};
  const std::vector<uint8_t> packed = nlohmann::json::to_msgpack(j);
  return std::string(packed.begin(), packed.end());
}

void EvalAccumulator::merge(const std::string& bytes) {
  const nlohmann::json j = nlohmann::json::from_msgpack(bytes);
  if (j["problem"].get<int>() != static_cast<int>(ProblemType::Unset)) problem_ = static_cast<ProblemType>(j["problem"].get<int>());
  loss_sum_ += j["loss_sum"].get<double>();
  norm_ += j["norm"].get<double>();
  auto append = [](auto& dst, const nlohmann::json& src) {
    for (const auto& v : src) dst.push_back(v.get<typename std::decay_t<decltype(dst)>::value_type>());
  };
  append(pred_, j["pred"]);
  append(label_, j["label"]);
  append(pred_value_, j["value"]);
  append(target_, j["target"]);
}

nlohmann::json EvalAccumulator::metrics(const std::string& prefix) const {
  nlohmann::json out;
  const double loss = norm_ > 0 ? loss_sum_ / norm_ : 0.0;
  out[prefix + "_loss"] = loss;
  auto put = [&](const std::map<std::string, double>& m) {
    for (const auto& [k, v] : m) out[prefix + "_" + k] = v;
  };
  if (cfg_.task == Task::MaskedLM) {  // language modelling (a causal-LM task joins here)
    out[prefix + "_perplexity"] = perplexity(loss);
    size_t hits = 0;
    for (size_t i = 0; i < pred_.size(); ++i) hits += pred_[i] == label_[i];
    out[prefix + "_accuracy"] = pred_.empty() ? 0.0 : static_cast<double>(hits) / pred_.size();
    return out;
  }
  switch (problem_) {
    case ProblemType::SingleLabel:
      if (!pred_.empty()) put(to_map(compute_classification(pred_, label_, cfg_.num_labels)));
      break;
    case ProblemType::MultiLabel:
      if (!pred_.empty()) put(to_map(compute_multilabel(pred_, label_, cfg_.num_labels)));
      break;
    case ProblemType::Regression:
      if (!pred_value_.empty()) put(to_map(compute_regression(pred_value_, target_)));
      break;
    case ProblemType::Unset: break;
  }
  return out;
}

}  // namespace strata
