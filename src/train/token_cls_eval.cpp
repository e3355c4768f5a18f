#include "train/token_cls_eval.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "generate/sampling.h"
#include "io/files.h"
#include "train/seqeval.h"
#include "util/error.h"

namespace strata {

namespace {

struct Row {
  std::vector<int32_t> predicted, gold;  // at the labelled positions
  std::vector<int32_t> word_tags;        // each word's tag, at its first token
  // With keep_arrays(): every position's logits [T, num_labels] and label (-100: none).
  std::vector<float> logits;
  std::vector<int32_t> labels;
};

class TokenClsPass final : public EvalPass {
 public:
  TokenClsPass(const std::vector<std::string>& names, bool entity_level) : names_(names), entity_level_(entity_level) {}

  void add(const Batch& b, const std::vector<HeadOutput<float>>& outputs) override {
    const float* logits = outputs.at(0).data;  // [B, T, num_labels]
    const int L = static_cast<int>(names_.size());
    tags_.resize(static_cast<size_t>(b.B) * b.T);
    // On the host (the logits are a host copy, and few per token): the first of ties, as np.argmax.
    for (size_t at = 0; at < tags_.size(); ++at) tags_[at] = gen::argmax(logits + at * L, L);
    for (int r = 0; r < b.B; ++r) {
      Row row;
      int32_t last_word = -1;
      for (int t = 0; t < b.T; ++t) {
        const size_t at = static_cast<size_t>(r) * b.T + t;
        const int32_t tag = tags_[at];
        if (!b.labels.empty() && b.labels[at] != -100) {
          row.predicted.push_back(tag);
          row.gold.push_back(b.labels[at]);
        }
        const int32_t word = b.word_ids.empty() ? -1 : b.word_ids[at];
        if (word >= 0 && word != last_word) row.word_tags.push_back(tag);
        if (word >= 0) last_word = word;
        if (keep_arrays_) {
          const float* x = logits + at * L;
          row.logits.insert(row.logits.end(), x, x + L);
          row.labels.push_back(b.labels.empty() ? -100 : b.labels[at]);
        }
      }
      rows_[b.example_ids.empty() ? rows_.size() : b.example_ids[r]] = std::move(row);
    }
  }

  std::string serialize() const override {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& [i, r] : rows_) j.push_back({i, r.predicted, r.gold, r.word_tags, r.logits, r.labels});
    return pack(j);
  }

  void merge(const std::string& bytes) override {
    for (const auto& e : unpack(bytes))
      rows_[e[0].get<size_t>()] = {e[1].get<std::vector<int32_t>>(), e[2].get<std::vector<int32_t>>(),
                                   e[3].get<std::vector<int32_t>>(), e[4].get<std::vector<float>>(),
                                   e[5].get<std::vector<int32_t>>()};
  }

  void metrics(const std::string& prefix, double loss, nlohmann::json& out) const override {
    if (std::isnan(loss)) return;
    out[prefix + "_loss"] = loss;
    std::vector<std::vector<std::string>> predictions, references;
    for (const auto& [i, r] : rows_) {
      if (r.gold.empty()) continue;
      predictions.push_back(names_of(r.predicted));
      references.push_back(names_of(r.gold));
    }
    if (references.empty()) return;
    for (const auto& [k, v] : to_map(compute_seqeval(predictions, references), entity_level_)) out[prefix + "_" + k] = v;
  }

  std::string write_predictions(const std::string& dir, const std::string& prefix) const override {
    std::string text;
    for (const auto& [i, r] : rows_) {
      std::string line;
      for (const std::string& t : names_of(r.word_tags)) line += (line.empty() ? "" : " ") + t;
      text += line + "\n";
    }
    const std::string name = prefix == "predict" ? "predictions.txt" : prefix + "_predictions.txt";
    const std::string path = (std::filesystem::path(dir) / name).string();
    io::write_file_atomic(path, text);
    return path;
  }

  void keep_arrays() override { keep_arrays_ = true; }

  // As HF's Trainer concatenates token-classification outputs: logits [N, T, num_labels] and
  // labels [N, T], T the longest example's padded length, shorter rows padded with -100.
  PredictionArrays arrays() const override {
    if (!keep_arrays_) fail("token classification kept no logits (keep_arrays() was not asked before the pass)");
    const int64_t L = static_cast<int64_t>(names_.size()), N = static_cast<int64_t>(rows_.size());
    int64_t T = 0;
    bool labelled = false;
    for (const auto& [i, r] : rows_) {
      T = std::max(T, static_cast<int64_t>(r.labels.size()));
      labelled = labelled || std::any_of(r.labels.begin(), r.labels.end(), [](int32_t l) { return l != -100; });
    }
    PredictionArrays a;
    a.predictions_shape = {N, T, L};
    a.predictions.assign(static_cast<size_t>(N * T * L), -100.0f);
    if (labelled) {
      a.labels_shape = {N, T};
      a.int_labels.assign(static_cast<size_t>(N * T), -100);
    }
    int64_t n = 0;
    for (const auto& [i, r] : rows_) {
      std::copy(r.logits.begin(), r.logits.end(), a.predictions.begin() + n * T * L);
      if (labelled) std::copy(r.labels.begin(), r.labels.end(), a.int_labels.begin() + n * T);
      ++n;
    }
    return a;
  }

 private:
  std::vector<std::string> names_of(const std::vector<int32_t>& ids) const {
    std::vector<std::string> out;
    for (int32_t id : ids) out.push_back(names_.at(static_cast<size_t>(id)));
    return out;
  }

  const std::vector<std::string>& names_;
  const bool entity_level_;
  bool keep_arrays_ = false;
  std::map<size_t, Row> rows_;  // by dataset index: dataset order, each example once
  std::vector<int32_t> tags_;   // [B, T]: each position's argmax tag, for the batch being added
};

class TokenClsTask final : public EvalTask {
 public:
  TokenClsTask(std::vector<std::string> names, bool entity_level) : names_(std::move(names)), entity_level_(entity_level) {}
  std::unique_ptr<EvalPass> start() const override { return std::make_unique<TokenClsPass>(names_, entity_level_); }

 private:
  const std::vector<std::string> names_;
  const bool entity_level_;
};

}  // namespace

std::unique_ptr<EvalTask> token_cls_eval_task(std::vector<std::string> tag_names, bool entity_level) {
  return std::make_unique<TokenClsTask>(std::move(tag_names), entity_level);
}

}  // namespace strata
