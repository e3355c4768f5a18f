#include "train/qa_postprocess.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "io/files.h"
#include "util/error.h"

namespace strata {

namespace {

// A span of the context in code points, with its score.
struct Span {
  int32_t begin = 0, end = 0;
  float score = 0, start_logit = 0, end_logit = 0;
};

// np.argsort(x)[-1 : -n - 1 : -1]: the n largest, largest first, ties to the higher index.
std::vector<size_t> top_n(const float* x, size_t width, size_t n) {
  std::vector<size_t> idx(width);
  std::iota(idx.begin(), idx.end(), size_t{0});
  n = std::min(n, width);
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(n), idx.end(),
                    [&](size_t a, size_t b) { return x[a] > x[b] || (x[a] == x[b] && a > b); });
  idx.resize(n);
  return idx;
}

std::string slice(const std::string& context, int32_t b, int32_t e) {
  if (b >= e) return {};
  const size_t bb = data::byte_of_code_point(context, static_cast<size_t>(b));
  const size_t eb = data::byte_of_code_point(context, static_cast<size_t>(e));
  return context.substr(bb, eb - bb);
}

QaPrediction predict_example(const data::QaExample& ex, const data::QaFeatures& features, size_t e,
                             const QaLogits& logits, const QaPostprocessOptions& opts) {
  std::vector<Span> prelim;
  std::optional<Span> min_null;
  for (size_t f = features.first[e]; f < features.first[e + 1]; ++f) {
    const data::QaFeature& feat = features.features[f];
    const float* s = logits.start.data() + f * logits.width;
    const float* en = logits.end.data() + f * logits.width;
    const float null_score = s[0] + en[0];
    if (!min_null || min_null->score > null_score) min_null = Span{0, 0, null_score, s[0], en[0]};
    const size_t len = feat.offsets.size();
    const std::vector<size_t> ends = top_n(en, logits.width, opts.n_best_size);
    for (size_t si : top_n(s, logits.width, opts.n_best_size)) {
      for (size_t ei : ends) {
        if (si >= len || ei >= len || !feat.offsets[si].in_context() || !feat.offsets[ei].in_context()) continue;
        if (ei < si || ei - si + 1 > opts.max_answer_length) continue;
        prelim.push_back({feat.offsets[si].begin, feat.offsets[ei].end, s[si] + en[ei], s[si], en[ei]});
      }
    }
  }
  if (opts.version_2_with_negative) prelim.push_back(*min_null);
  std::stable_sort(prelim.begin(), prelim.end(), [](const Span& a, const Span& b) { return a.score > b.score; });
  if (prelim.size() > opts.n_best_size) prelim.resize(opts.n_best_size);
  if (opts.version_2_with_negative &&
      std::none_of(prelim.begin(), prelim.end(), [](const Span& p) { return p.begin == 0 && p.end == 0; }))
    prelim.push_back(*min_null);

  QaPrediction out;
  out.id = ex.id;
  std::vector<float> scores;
  for (const Span& p : prelim) {
    out.nbest.push_back({slice(ex.context, p.begin, p.end), p.start_logit, p.end_logit, 0});
    scores.push_back(p.score);
  }
  // HF's guard for an example without a single non-null candidate.
  if (out.nbest.empty() || (out.nbest.size() == 1 && out.nbest[0].text.empty())) {
    out.nbest.insert(out.nbest.begin(), {"empty", 0, 0, 0});
    scores.insert(scores.begin(), 0.0f);
  }
  const float top = *std::max_element(scores.begin(), scores.end());
  double sum = 0;
  for (float sc : scores) sum += std::exp(static_cast<double>(sc) - top);
  for (size_t i = 0; i < scores.size(); ++i)
    out.nbest[i].probability = static_cast<float>(std::exp(static_cast<double>(scores[i]) - top) / sum);

  if (!opts.version_2_with_negative) {
    out.prediction_text = out.nbest[0].text;
    return out;
  }
  const auto best = std::find_if(out.nbest.begin(), out.nbest.end(), [](const QaCandidate& c) { return !c.text.empty(); });
  if (best == out.nbest.end()) return out;  // only empty spans: predict no answer
  const float diff = min_null->score - best->start_logit - best->end_logit;
  out.score_diff = diff;
  if (!(static_cast<double>(diff) > opts.null_score_diff_threshold)) out.prediction_text = best->text;
  return out;
}

}  // namespace

std::vector<QaPrediction> postprocess_qa_predictions(const data::QaExamples& examples, const data::QaFeatures& features,
                                                     const QaLogits& logits, const QaPostprocessOptions& opts) {
  const size_t n = features.features.size();
  if (features.train) fail("question answering post-processing needs evaluation features (with offsets), not training ones");
  if (features.num_examples() != examples.examples.size())
    fail("question answering post-processing: ", features.num_examples(), " examples in the features but ",
         examples.examples.size(), " given");
  if (logits.width == 0 || logits.start.size() != n * logits.width || logits.end.size() != n * logits.width)
    fail("question answering post-processing: expected start and end logits of ", n, " features x width ", logits.width,
         ", got ", logits.start.size(), " and ", logits.end.size(), " values");
  std::vector<QaPrediction> out;
  out.reserve(examples.examples.size());
  for (size_t e = 0; e < examples.examples.size(); ++e)
    out.push_back(predict_example(examples.examples[e], features, e, logits, opts));
  return out;
}

std::vector<SquadPrediction> squad_predictions(const std::vector<QaPrediction>& preds) {
  std::vector<SquadPrediction> out;
  out.reserve(preds.size());
  for (const QaPrediction& p : preds) out.push_back({p.id, p.prediction_text, 0.0});
  return out;
}

std::vector<SquadReference> squad_references(const data::QaExamples& examples) {
  std::vector<SquadReference> out;
  out.reserve(examples.examples.size());
  for (const data::QaExample& e : examples.examples) {
    SquadReference r{e.id, {}};
    for (const data::QaAnswer& a : e.answers) r.answers.push_back(a.text);
    out.push_back(std::move(r));
  }
  return out;
}

void write_qa_predictions(const std::string& dir, const std::string& prefix, const std::vector<QaPrediction>& preds) {
  nlohmann::ordered_json best = nlohmann::ordered_json::object(), nbest = nlohmann::ordered_json::object(),
                         odds = nlohmann::ordered_json::object();
  for (const QaPrediction& p : preds) {
    best[p.id] = p.prediction_text;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const QaCandidate& c : p.nbest)
      list.push_back({{"start_logit", c.start_logit}, {"end_logit", c.end_logit}, {"text", c.text},
                      {"probability", c.probability}});
    nbest[p.id] = std::move(list);
    if (p.score_diff) odds[p.id] = *p.score_diff;
  }
  const std::string stem = dir + "/" + (prefix.empty() ? "" : prefix + "_");
  io::write_file_atomic(stem + "predictions.json", best.dump(4) + "\n");
  io::write_file_atomic(stem + "nbest_predictions.json", nbest.dump(4) + "\n");
  if (!odds.empty()) io::write_file_atomic(stem + "null_odds.json", odds.dump(4) + "\n");
}

}  // namespace strata
