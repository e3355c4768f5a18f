#include "train/squad_metrics.h"

#include <algorithm>
#include <unordered_map>

#include "data/py_text.h"
#include "util/error.h"

namespace strata {

namespace py = data::py;

namespace {

bool ascii_punctuation(char c) {  // Python's string.punctuation
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~');
}

// re.sub(r"\b(a|an|the)\b", " ", text): a whole run of \w characters that is an article.
std::string remove_articles(const std::string& s) {
  const std::u32string u = py::decode(s);
  auto word = [](char32_t c) { return c == U'_' || py::isalnum(c); };
  std::u32string out;
  for (size_t i = 0; i < u.size();) {
    if (!word(u[i])) {
      out.push_back(u[i++]);
      continue;
    }
    size_t j = i;
    while (j < u.size() && word(u[j])) ++j;
    const std::u32string_view run(u.data() + i, j - i);
    if (run == U"a" || run == U"an" || run == U"the") {
      out.push_back(U' ');
    } else {
      out.append(run);
    }
    i = j;
  }
  return py::encode(out);
}

std::vector<std::string> tokens(const std::string& s) { return py::split(normalize_answer(s)); }

// sum((Counter(a) & Counter(b)).values())
size_t common_tokens(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::unordered_map<std::string, long> count;
  for (const auto& t : a) ++count[t];
  size_t same = 0;
  for (const auto& t : b)
    if (count[t]-- > 0) ++same;
  return same;
}

double f1_of(size_t same, size_t n_pred, size_t n_gold) {
  if (same == 0) return 0;
  const double precision = static_cast<double>(same) / static_cast<double>(n_pred);
  const double recall = static_cast<double>(same) / static_cast<double>(n_gold);
  return 2 * precision * recall / (precision + recall);
}

// v2.0's compute_f1: an empty side scores 1 when both are empty, else 0.
double f1_v2(const std::string& prediction, const std::string& gold) {
  const auto p = tokens(prediction), g = tokens(gold);
  if (p.empty() || g.empty()) return p == g ? 1 : 0;
  return f1_of(common_tokens(p, g), p.size(), g.size());
}

}  // namespace

std::string normalize_answer(const std::string& s) {
  std::string t = py::lower(s);
  std::erase_if(t, ascii_punctuation);
  const std::vector<std::string> words = py::split(remove_articles(t));
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

double squad_exact(const std::string& prediction, const std::string& gold) {
  return normalize_answer(prediction) == normalize_answer(gold) ? 1 : 0;
}

double squad_f1(const std::string& prediction, const std::string& gold) {
  const auto p = tokens(prediction), g = tokens(gold);
  return f1_of(common_tokens(p, g), p.size(), g.size());
}

SquadMetrics compute_squad(const std::vector<SquadPrediction>& preds, const std::vector<SquadReference>& refs) {
  if (refs.empty()) fail("squad metric: no references");
  std::unordered_map<std::string, const std::string*> text;
  for (const auto& p : preds) text[p.id] = &p.prediction_text;
  double em = 0, f1 = 0;
  for (const auto& r : refs) {
    if (r.answers.empty())
      fail("squad metric: question '", r.id, "' has no gold answer (unanswerable questions need squad_v2)");
    const auto it = text.find(r.id);
    if (it == text.end()) continue;
    double best_em = 0, best_f1 = 0;
    for (const auto& g : r.answers) {
      best_em = std::max(best_em, squad_exact(*it->second, g));
      best_f1 = std::max(best_f1, squad_f1(*it->second, g));
    }
    em += best_em;
    f1 += best_f1;
  }
  const double n = static_cast<double>(refs.size());
  return {100.0 * em / n, 100.0 * f1 / n};
}

SquadV2Metrics compute_squad_v2(const std::vector<SquadPrediction>& preds, const std::vector<SquadReference>& refs,
                                double no_answer_threshold) {
  if (refs.empty()) fail("squad_v2 metric: no references");
  // {id: ...} of the predictions as a Python dict builds it: first position, last value.
  std::vector<std::string> order;
  std::unordered_map<std::string, const SquadPrediction*> pred;
  for (const auto& p : preds)
    if (pred.insert_or_assign(p.id, &p).second) order.push_back(p.id);

  struct Scored {
    bool has_ans;
    double exact, f1;
  };
  std::unordered_map<std::string, Scored> raw;
  SquadV2Metrics m;
  // Thresholded sums in reference order, as Python's sum() adds them: [no answer, has answer, all].
  double exact_sum[3] = {0, 0, 0}, f1_sum[3] = {0, 0, 0};
  for (const auto& r : refs) {
    const auto it = pred.find(r.id);
    if (it == pred.end()) fail("squad_v2 metric: no prediction for question '", r.id, "'");
    std::vector<std::string> gold;
    for (const auto& a : r.answers)
      if (!normalize_answer(a).empty()) gold.push_back(a);
    if (gold.empty()) gold.push_back("");
    const std::string& text = it->second->prediction_text;
    Scored s{!r.answers.empty(), 0, 0};
    for (const auto& g : gold) {
      s.exact = std::max(s.exact, squad_exact(text, g));
      s.f1 = std::max(s.f1, f1_v2(text, g));
    }
    raw[r.id] = s;
    const bool predict_none = it->second->no_answer_probability > no_answer_threshold;
    const double exact = predict_none ? (s.has_ans ? 0 : 1) : s.exact;
    const double f1 = predict_none ? (s.has_ans ? 0 : 1) : s.f1;
    for (int k : {s.has_ans ? 1 : 0, 2}) {
      exact_sum[k] += exact;
      f1_sum[k] += f1;
    }
    ++(s.has_ans ? m.has_ans_total : m.no_ans_total);
  }
  m.total = refs.size();
  const double n = static_cast<double>(m.total);
  m.exact = 100.0 * exact_sum[2] / n;
  m.f1 = 100.0 * f1_sum[2] / n;
  if (m.has_ans_total) {
    m.has_ans_exact = 100.0 * exact_sum[1] / static_cast<double>(m.has_ans_total);
    m.has_ans_f1 = 100.0 * f1_sum[1] / static_cast<double>(m.has_ans_total);
  }
  if (m.no_ans_total) {
    m.no_ans_exact = 100.0 * exact_sum[0] / static_cast<double>(m.no_ans_total);
    m.no_ans_f1 = 100.0 * f1_sum[0] / static_cast<double>(m.no_ans_total);
  }
  // find_best_thresh: walk the predictions by rising no_answer_probability, answering each
  // question from then on; the threshold is the probability where the running score peaked.
  std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    return pred[a]->no_answer_probability < pred[b]->no_answer_probability;
  });
  auto best = [&](double Scored::*score, double& best_score, double& best_thresh) {
    double cur = static_cast<double>(m.no_ans_total);
    double top = cur;
    best_thresh = 0;
    for (const auto& id : order) {
      const auto it = raw.find(id);
      if (it == raw.end()) continue;
      const Scored& s = it->second;
      cur += s.has_ans ? s.*score : (pred[id]->prediction_text.empty() ? 0 : -1);
      if (cur > top) {
        top = cur;
        best_thresh = pred[id]->no_answer_probability;
      }
    }
    best_score = 100.0 * top / static_cast<double>(raw.size());
  };
  best(&Scored::exact, m.best_exact, m.best_exact_thresh);
  best(&Scored::f1, m.best_f1, m.best_f1_thresh);
  return m;
}

std::map<std::string, double> to_map(const SquadMetrics& m) { return {{"exact_match", m.exact_match}, {"f1", m.f1}}; }

std::map<std::string, double> to_map(const SquadV2Metrics& m) {
  std::map<std::string, double> out{{"exact", m.exact},
                                    {"f1", m.f1},
                                    {"total", static_cast<double>(m.total)},
                                    {"best_exact", m.best_exact},
                                    {"best_exact_thresh", m.best_exact_thresh},
                                    {"best_f1", m.best_f1},
                                    {"best_f1_thresh", m.best_f1_thresh}};
  if (m.has_ans_total) {
    out["HasAns_exact"] = m.has_ans_exact;
    out["HasAns_f1"] = m.has_ans_f1;
    out["HasAns_total"] = static_cast<double>(m.has_ans_total);
  }
  if (m.no_ans_total) {
    out["NoAns_exact"] = m.no_ans_exact;
    out["NoAns_f1"] = m.no_ans_f1;
    out["NoAns_total"] = static_cast<double>(m.no_ans_total);
  }
  return out;
}

}  // namespace strata
