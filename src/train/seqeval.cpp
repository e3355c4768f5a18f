#include "train/seqeval.h"

#include <cmath>
#include <set>
#include <tuple>

#include "util/error.h"

namespace strata {

namespace {

// seqeval's end_of_chunk / start_of_chunk, on chunk tags and types.
bool chunk_ends(char prev_tag, char tag, const std::string& prev_type, const std::string& type) {
  if (prev_tag == 'E' || prev_tag == 'S') return true;
  if ((prev_tag == 'B' || prev_tag == 'I') && (tag == 'B' || tag == 'S' || tag == 'O')) return true;
  return prev_tag != 'O' && prev_tag != '.' && prev_type != type;
}

bool chunk_starts(char prev_tag, char tag, const std::string& prev_type, const std::string& type) {
  if (tag == 'B' || tag == 'S') return true;
  if ((prev_tag == 'E' || prev_tag == 'S' || prev_tag == 'O') && (tag == 'E' || tag == 'I')) return true;
  return tag != 'O' && tag != '.' && prev_type != type;
}

double ratio(size_t a, size_t b) { return b == 0 ? 0 : static_cast<double>(a) / static_cast<double>(b); }

EntityScores scores(size_t correct, size_t predicted, size_t gold) {
  EntityScores s;
  s.precision = ratio(correct, predicted);
  s.recall = ratio(correct, gold);
  const double denom = s.precision + s.recall;
  s.f1 = denom == 0 ? 0 : 2 * s.precision * s.recall / denom;
  s.number = gold;
  return s;
}

// Sentences joined with an "O" after each, as seqeval flattens a list of lists.
std::vector<std::string> flatten(const std::vector<std::vector<std::string>>& seqs) {
  std::vector<std::string> out;
  for (const auto& s : seqs) {
    out.insert(out.end(), s.begin(), s.end());
    out.push_back("O");
  }
  return out;
}

}  // namespace

std::vector<Entity> get_entities(const std::vector<std::string>& tags) {
  std::vector<Entity> out;
  char prev_tag = 'O';
  std::string prev_type;
  size_t begin = 0;
  for (size_t i = 0; i <= tags.size(); ++i) {
    const std::string& chunk = i < tags.size() ? tags[i] : std::string("O");
    if (chunk.empty()) fail("seqeval: empty tag at position ", i);
    const char tag = chunk[0];
    // Python: chunk[1:].split('-', maxsplit=1)[-1] or '_'
    const std::string rest = chunk.substr(1);
    const size_t dash = rest.find('-');
    std::string type = dash == std::string::npos ? rest : rest.substr(dash + 1);
    if (type.empty()) type.push_back('_');
    if (chunk_ends(prev_tag, tag, prev_type, type)) out.push_back({prev_type, begin, i - 1});
    if (chunk_starts(prev_tag, tag, prev_type, type)) begin = i;
    prev_tag = tag;
    prev_type = std::move(type);
  }
  return out;
}

SeqevalMetrics compute_seqeval(const std::vector<std::vector<std::string>>& predictions,
                               const std::vector<std::vector<std::string>>& references) {
  if (predictions.size() != references.size())
    fail("seqeval: ", predictions.size(), " predicted sequences but ", references.size(), " references");
  size_t tokens = 0, correct = 0;
  for (size_t i = 0; i < references.size(); ++i) {
    if (predictions[i].size() != references[i].size())
      fail("seqeval: sequence ", i, " has ", predictions[i].size(), " predicted tags but ", references[i].size(),
           " reference tags");
    for (size_t k = 0; k < references[i].size(); ++k) correct += predictions[i][k] == references[i][k] ? 1 : 0;
    tokens += references[i].size();
  }
  if (tokens == 0) fail("seqeval: no tags to score");

  using Key = std::tuple<std::string, size_t, size_t>;
  std::set<Key> gold, pred;
  for (const Entity& e : get_entities(flatten(references))) gold.emplace(e.type, e.first, e.last);
  for (const Entity& e : get_entities(flatten(predictions))) pred.emplace(e.type, e.first, e.last);
  struct Counts {
    size_t correct = 0, predicted = 0, gold = 0;
  };
  std::map<std::string, Counts> by_type;
  for (const Key& k : gold) {
    ++by_type[std::get<0>(k)].gold;
    if (pred.count(k)) ++by_type[std::get<0>(k)].correct;
  }
  for (const Key& k : pred) ++by_type[std::get<0>(k)].predicted;

  SeqevalMetrics m;
  Counts all;
  for (const auto& [type, c] : by_type) {
    m.per_type[type] = scores(c.correct, c.predicted, c.gold);
    all.correct += c.correct;
    all.predicted += c.predicted;
    all.gold += c.gold;
  }
  const EntityScores overall = scores(all.correct, all.predicted, all.gold);
  m.overall_precision = overall.precision;
  m.overall_recall = overall.recall;
  m.overall_f1 = overall.f1;
  m.overall_accuracy = ratio(correct, tokens);
  return m;
}

void add_tag_sequences(TagSequences& out, std::span<const float> logits, std::span<const int32_t> labels, size_t rows,
                       size_t T, const std::vector<std::string>& label_names) {
  const size_t C = label_names.size();
  if (C == 0 || logits.size() != rows * T * C || labels.size() != rows * T)
    fail("token classification metrics: expected logits [", rows, ", ", T, ", ", C, "] and labels [", rows, ", ", T,
         "], got ", logits.size(), " and ", labels.size(), " values");
  for (size_t r = 0; r < rows; ++r) {
    std::vector<std::string> pred, ref;
    for (size_t t = 0; t < T; ++t) {
      const int32_t label = labels[r * T + t];
      if (label == -100) continue;
      if (label < 0 || static_cast<size_t>(label) >= C)
        fail("token classification metrics: label ", label, " at row ", r, ", position ", t, " is not in [0, ", C, ")");
      const float* x = logits.data() + (r * T + t) * C;
      size_t best = 0;  // np.argmax: the first maximum; a NaN counts as the maximum
      for (size_t c = 0; c < C && !std::isnan(x[best]); ++c)
        if (std::isnan(x[c]) || x[c] > x[best]) best = c;
      pred.push_back(label_names[best]);
      ref.push_back(label_names[static_cast<size_t>(label)]);
    }
    out.predictions.push_back(std::move(pred));
    out.references.push_back(std::move(ref));
  }
}

std::map<std::string, double> to_map(const SeqevalMetrics& m, bool entity_level) {
  if (!entity_level)
    return {{"precision", m.overall_precision}, {"recall", m.overall_recall}, {"f1", m.overall_f1},
            {"accuracy", m.overall_accuracy}};
  std::map<std::string, double> out{{"overall_precision", m.overall_precision},
                                    {"overall_recall", m.overall_recall},
                                    {"overall_f1", m.overall_f1},
                                    {"overall_accuracy", m.overall_accuracy}};
  for (const auto& [type, s] : m.per_type) {
    out[type + "_precision"] = s.precision;
    out[type + "_recall"] = s.recall;
    out[type + "_f1"] = s.f1;
    out[type + "_number"] = static_cast<double>(s.number);
  }
  return out;
}

}  // namespace strata
