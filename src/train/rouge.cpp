#include "train/rouge.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "data/py_text.h"
#include "train/porter_stemmer.h"
#include "util/error.h"

// Mirrors rouge_score/rouge_scorer.py and tokenize.py function for function; each
// precision, recall and F-measure is computed with the same operations in the same order, so
// the results are the package's to the last bit.
namespace strata {

namespace {

using Tokens = std::vector<std::string>;

bool is_ascii_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// scoring.fmeasure
double fmeasure(double precision, double recall) {
  return precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0.0;
}

RougeScore make_score(double precision, double recall) { return {precision, recall, fmeasure(precision, recall)}; }

double ratio(size_t a, size_t b) { return static_cast<double>(a) / static_cast<double>(b); }

// _create_ngrams: n-gram -> count, an n-gram being its tokens joined by ' ' (tokens never
// contain one).
std::unordered_map<std::string, size_t> ngram_counts(const Tokens& tokens, size_t n) {
  std::unordered_map<std::string, size_t> counts;
  for (size_t i = 0; i + n <= tokens.size(); ++i) {
    std::string key = tokens[i];
    for (size_t k = 1; k < n; ++k) key.append(" ").append(tokens[i + k]);
    ++counts[key];
  }
  return counts;
}

// _score_ngrams: overlap clipped per n-gram; an empty side divides by 1.
RougeScore score_ngrams(const Tokens& target, const Tokens& prediction, size_t n) {
  const auto t = ngram_counts(target, n), p = ngram_counts(prediction, n);
  size_t hits = 0, target_total = 0, prediction_total = 0;
  for (const auto& [gram, count] : t) {
    const auto it = p.find(gram);
    if (it != p.end()) hits += std::min(count, it->second);
    target_total += count;
  }
  for (const auto& [gram, count] : p) prediction_total += count;
  return make_score(ratio(hits, std::max<size_t>(prediction_total, 1)), ratio(hits, std::max<size_t>(target_total, 1)));
}

// _lcs_table: (rows + 1) x (cols + 1), row-major; cell (i, j) is the LCS length of ref[:i]
// and can[:j].
struct LcsTable {
  size_t cols;
  std::vector<size_t> cells;
  size_t at(size_t i, size_t j) const { return cells[i * (cols + 1) + j]; }
};

LcsTable lcs_table(const Tokens& ref, const Tokens& can) {
  LcsTable t{can.size(), std::vector<size_t>((ref.size() + 1) * (can.size() + 1), 0)};
  const size_t w = can.size() + 1;
  for (size_t i = 1; i <= ref.size(); ++i)
    for (size_t j = 1; j <= can.size(); ++j)
      t.cells[i * w + j] = ref[i - 1] == can[j - 1] ? t.cells[(i - 1) * w + j - 1] + 1
                                                    : std::max(t.cells[(i - 1) * w + j], t.cells[i * w + j - 1]);
  return t;
}

RougeScore score_lcs(const Tokens& target, const Tokens& prediction) {
  if (target.empty() || prediction.empty()) return {};
  const size_t lcs = lcs_table(target, prediction).at(target.size(), prediction.size());
  return make_score(ratio(lcs, prediction.size()), ratio(lcs, target.size()));
}

// lcs_ind (_backtrack_norec): the positions in ref of one LCS with can. Which LCS matters for
// the union below, so ties go as rouge_score breaks them: up unless left is strictly longer.
void add_lcs_positions(const Tokens& ref, const Tokens& can, std::set<size_t>& positions) {
  const LcsTable t = lcs_table(ref, can);
  size_t i = ref.size(), j = can.size();
  while (i > 0 && j > 0) {
    if (ref[i - 1] == can[j - 1]) {
      positions.insert(i - 1);
      --i;
      --j;
    } else if (t.at(i, j - 1) > t.at(i - 1, j)) {
      --j;
    } else {
      --i;
    }
  }
}

// _summary_level_lcs: for each reference sentence the union of its LCS positions with every
// candidate sentence; a hit consumes one occurrence of the token on both sides, so no token
// counts more often than it occurs in either summary.
RougeScore summary_level_lcs(const std::vector<Tokens>& ref_sents, const std::vector<Tokens>& can_sents) {
  if (ref_sents.empty() || can_sents.empty()) return {};
  std::unordered_map<std::string, size_t> ref_left, can_left;
  size_t m = 0, n = 0;
  for (const auto& s : ref_sents) {
    m += s.size();
    for (const auto& tok : s) ++ref_left[tok];
  }
  for (const auto& s : can_sents) {
    n += s.size();
    for (const auto& tok : s) ++can_left[tok];
  }
  if (m == 0 || n == 0) return {};
  size_t hits = 0;
  for (const auto& r : ref_sents) {
    std::set<size_t> union_positions;
    for (const auto& c : can_sents) add_lcs_positions(r, c, union_positions);
    for (const size_t pos : union_positions) {
      size_t& in_can = can_left[r[pos]];
      size_t& in_ref = ref_left[r[pos]];
      if (in_can > 0 && in_ref > 0) {
        ++hits;
        --in_can;
        --in_ref;
      }
    }
  }
  return make_score(ratio(hits, n), ratio(hits, m));
}

// get_sents without split_summaries: the non-empty "\n"-separated lines, tokenized.
std::vector<Tokens> sentence_tokens(std::string_view text, bool use_stemmer) {
  std::vector<Tokens> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find('\n', begin), text.size());
    if (end > begin) out.push_back(rouge_tokenize(text.substr(begin, end - begin), use_stemmer));
    begin = end + 1;
  }
  return out;
}

RougeScores aggregate(std::vector<RougeExampleScores> per_example) {
  RougeScores out;
  for (const auto& e : per_example) {
    out.rouge1 += e.rouge1.fmeasure;
    out.rouge2 += e.rouge2.fmeasure;
    out.rougeL += e.rougeL.fmeasure;
    out.rougeLsum += e.rougeLsum.fmeasure;
  }
  const double count = static_cast<double>(per_example.size());
  out.rouge1 /= count;
  out.rouge2 /= count;
  out.rougeL /= count;
  out.rougeLsum /= count;
  out.per_example = std::move(per_example);
  return out;
}

void check_sizes(size_t predictions, size_t references) {
  if (predictions == 0) fail("rouge: no predictions to score");
  if (predictions != references)
    fail("rouge: ", predictions, " predictions but ", references, " references; each prediction needs its reference");
}

}  // namespace

std::vector<std::string> rouge_tokenize(std::string_view text, bool use_stemmer) {
  // Lowercasing first matters past ASCII: U+0130 lowercases to "i" + a combining dot and the
  // Kelvin sign to "k", which then count as letters.
  const std::string lower = data::py::lower(text);
  Tokens tokens;
  for (size_t i = 0; i < lower.size();) {
    if (!is_ascii_alnum(lower[i])) {
      ++i;
      continue;
    }
    const size_t begin = i;
    while (i < lower.size() && is_ascii_alnum(lower[i])) ++i;
    std::string token = lower.substr(begin, i - begin);
    // Only tokens of more than 3 characters are stemmed; a stem is kept only if it is still a
    // non-empty [a-z0-9]+ token.
    if (use_stemmer && token.size() > 3) {
      token = porter_stem(token);
      if (token.empty() || !std::all_of(token.begin(), token.end(), is_ascii_alnum)) continue;
    }
    tokens.push_back(std::move(token));
  }
  return tokens;
}

RougeExampleScores rouge_score(std::string_view target, std::string_view prediction, bool use_stemmer) {
  const Tokens t = rouge_tokenize(target, use_stemmer), p = rouge_tokenize(prediction, use_stemmer);
  RougeExampleScores s;
  s.rouge1 = score_ngrams(t, p, 1);
  s.rouge2 = score_ngrams(t, p, 2);
  s.rougeL = score_lcs(t, p);
  s.rougeLsum = summary_level_lcs(sentence_tokens(target, use_stemmer), sentence_tokens(prediction, use_stemmer));
  return s;
}

RougeExampleScores rouge_score_multi(const std::vector<std::string>& targets, std::string_view prediction,
                                     bool use_stemmer) {
  if (targets.empty()) fail("rouge: a prediction has no references to score against");
  RougeExampleScores best = rouge_score(targets[0], prediction, use_stemmer);
  for (size_t i = 1; i < targets.size(); ++i) {
    const RougeExampleScores s = rouge_score(targets[i], prediction, use_stemmer);
    // np.argmax per type: a later target replaces an earlier one only when strictly better.
    for (auto member : {&RougeExampleScores::rouge1, &RougeExampleScores::rouge2, &RougeExampleScores::rougeL,
                        &RougeExampleScores::rougeLsum})
      if ((s.*member).fmeasure > (best.*member).fmeasure) best.*member = s.*member;
  }
  return best;
}

RougeScores rouge(const std::vector<std::string>& predictions, const std::vector<std::string>& references,
                  bool use_stemmer) {
  check_sizes(predictions.size(), references.size());
  std::vector<RougeExampleScores> per_example;
  per_example.reserve(predictions.size());
  for (size_t i = 0; i < predictions.size(); ++i)
    per_example.push_back(rouge_score(references[i], predictions[i], use_stemmer));
  return aggregate(std::move(per_example));
}

RougeScores rouge(const std::vector<std::string>& predictions, const std::vector<std::vector<std::string>>& references,
                  bool use_stemmer) {
  check_sizes(predictions.size(), references.size());
  std::vector<RougeExampleScores> per_example;
  per_example.reserve(predictions.size());
  for (size_t i = 0; i < predictions.size(); ++i)
    per_example.push_back(rouge_score_multi(references[i], predictions[i], use_stemmer));
  return aggregate(std::move(per_example));
}

}  // namespace strata
