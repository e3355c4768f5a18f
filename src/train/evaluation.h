// Collects a model's outputs over an evaluation set and turns them into HF-style metrics:
// loss, and per problem type accuracy / precision / recall / F1 / MCC (classification),
// subset accuracy / micro-F1 (multi-label), MSE / Pearson / Spearman (regression), or
// perplexity and masked-token accuracy (masked LM).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/batch_checks.h"
#include "models/config.h"

namespace strata {

class EvalAccumulator {
 public:
  explicit EvalAccumulator(const ModelConfig& cfg) : cfg_(cfg) {}
  // logits of the batch ([B, L] or [B*T, V]); loss_sum = the batch's summed loss, norm its label count.
  void add(const Batch& b, const float* logits, double loss_sum, double norm);
  nlohmann::json metrics(const std::string& prefix) const;
  // What add() collected, as bytes another process can merge (distributed evaluation).
  std::string serialize() const;
  void merge(const std::string& bytes);

 private:
  const ModelConfig& cfg_;
  ProblemType problem_ = ProblemType::Unset;
  double loss_sum_ = 0, norm_ = 0;
  std::vector<int> pred_, label_;              // single-label, multi-label cells, masked-LM tokens
  std::vector<double> pred_value_, target_;    // regression
};

}  // namespace strata
