#include "train/qa_eval.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "train/squad_metrics.h"
#include "util/error.h"

namespace strata {

namespace {

const float* output(const std::vector<HeadOutput<float>>& outputs, const char* name) {
  for (const auto& o : outputs)
    if (o.name == name) return o.data;
  fail("question answering evaluation: the model has no ", name, " output");
}

class QaPass final : public EvalPass {
 public:
  QaPass(std::shared_ptr<const data::QaExamples> examples, std::shared_ptr<const data::QaFeatures> features,
         const QaPostprocessOptions& opts)
      : examples_(std::move(examples)), features_(std::move(features)), opts_(opts) {}

  void add(const Batch& b, const std::vector<HeadOutput<float>>& outputs) override {
    const float* start = output(outputs, "start_logits");
    const float* end = output(outputs, "end_logits");
    for (int r = 0; r < b.B; ++r) {
      const size_t f = b.example_ids.at(r), at = static_cast<size_t>(r) * b.T;
      // The feature's own tokens only: padding is -100, whatever the batch padded it to.
      const size_t n = std::min<size_t>(features_->features.at(f).enc.ids.size(), b.T);
      auto& [s, e] = rows_[f];
      s.assign(start + at, start + at + n);
      e.assign(end + at, end + at + n);
    }
  }

  std::string serialize() const override {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& [f, r] : rows_) j.push_back({f, r.first, r.second});
    return pack(j);
  }

  void merge(const std::string& bytes) override {
    for (const auto& e : unpack(bytes))
      rows_[e[0].get<size_t>()] = {e[1].get<std::vector<float>>(), e[2].get<std::vector<float>>()};
  }

  void metrics(const std::string& prefix, double, nlohmann::json& out) const override {
    if (!examples_->has_answers) return;
    const std::vector<QaPrediction>& preds = predictions();
    const auto p = squad_predictions(preds);
    const auto refs = squad_references(*examples_);
    const auto m = opts_.version_2_with_negative ? to_map(compute_squad_v2(p, refs)) : to_map(compute_squad(p, refs));
    for (const auto& [k, v] : m) out[prefix + "_" + k] = v;
  }

  std::string write_predictions(const std::string& dir, const std::string& prefix) const override {
    write_qa_predictions(dir, prefix, predictions());
    return (std::filesystem::path(dir) / (prefix + "_predictions.json")).string();
  }

 private:
  // Post-processed once, on first use (metrics and prediction files share it).
  const std::vector<QaPrediction>& predictions() const {
    if (predictions_.empty()) {
      QaLogits logits;
      logits.width = 1;
      for (const auto& [f, r] : rows_) logits.width = std::max(logits.width, r.first.size());
      const size_t n = features_->features.size();
      logits.start.assign(n * logits.width, -100.0f);
      logits.end.assign(n * logits.width, -100.0f);
      for (const auto& [f, r] : rows_) {
        std::copy(r.first.begin(), r.first.end(), logits.start.begin() + static_cast<ptrdiff_t>(f * logits.width));
        std::copy(r.second.begin(), r.second.end(), logits.end.begin() + static_cast<ptrdiff_t>(f * logits.width));
      }
      if (rows_.size() != n) fail("question answering evaluation: logits for ", rows_.size(), " of ", n, " features");
      predictions_ = postprocess_qa_predictions(*examples_, *features_, logits, opts_);
    }
    return predictions_;
  }

  std::shared_ptr<const data::QaExamples> examples_;
  std::shared_ptr<const data::QaFeatures> features_;
  const QaPostprocessOptions opts_;
  std::map<size_t, std::pair<std::vector<float>, std::vector<float>>> rows_;  // feature -> start, end logits
  mutable std::vector<QaPrediction> predictions_;
};

class QaTask final : public EvalTask {
 public:
  QaTask(std::shared_ptr<const data::QaExamples> examples, std::shared_ptr<const data::QaFeatures> features,
         QaPostprocessOptions opts)
      : examples_(std::move(examples)), features_(std::move(features)), opts_(opts) {}
  std::unique_ptr<EvalPass> start() const override { return std::make_unique<QaPass>(examples_, features_, opts_); }

 private:
  std::shared_ptr<const data::QaExamples> examples_;
  std::shared_ptr<const data::QaFeatures> features_;
  const QaPostprocessOptions opts_;
};

}  // namespace

std::unique_ptr<EvalTask> qa_eval_task(std::shared_ptr<const data::QaExamples> examples,
                                       std::shared_ptr<const data::QaFeatures> features, QaPostprocessOptions opts) {
  return std::make_unique<QaTask>(std::move(examples), std::move(features), opts);
}

}  // namespace strata
