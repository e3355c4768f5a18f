// Entity-level metrics for token classification, as HF `evaluate`'s "seqeval" metric
// computes them with seqeval 1.2's defaults (no scheme, no mode): entities are the chunks of
// seqeval's conlleval-like get_entities, which accepts IOB1, IOB2, IOE and IOBES alike (an
// I- after O, or after a chunk of another type, starts an entity); an entity counts as found
// when a predicted one has the same type, first and last position. Precision, recall and F1
// overall (micro: pooled over types) and per type, and token accuracy. A 0/0 ratio is 0.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace strata {

struct Entity {
  std::string type;
  size_t first = 0, last = 0;  // positions, inclusive
  bool operator==(const Entity&) const = default;
};

// seqeval.metrics.sequence_labeling.get_entities of one sequence: the tag's first character
// is its chunk tag (B, I, E, S, O, ...), the text after the first '-' its type ("_" when
// none). Throws strata::Error for an empty tag.
std::vector<Entity> get_entities(const std::vector<std::string>& tags);

struct EntityScores {
  double precision = 0, recall = 0, f1 = 0;
  size_t number = 0;  // entities of this type in the references
};

struct SeqevalMetrics {
  double overall_precision = 0, overall_recall = 0, overall_f1 = 0, overall_accuracy = 0;
  std::map<std::string, EntityScores> per_type;  // every type in references or predictions
};

// predictions[i] and references[i]: the tags of sentence i. Sentences are joined as seqeval
// joins them (an O after each), so no entity spans two. Throws strata::Error when the shapes
// differ or there are no tags.
SeqevalMetrics compute_seqeval(const std::vector<std::vector<std::string>>& predictions,
                               const std::vector<std::vector<std::string>>& references);

// run_ner's compute_metrics input: for each of `rows` rows of a [rows, T, num_labels] logits
// block and its [rows, T] labels, the argmax tag (the first on ties, as np.argmax) and the
// gold tag at every position whose label is not -100, appended as one sentence each.
struct TagSequences {
  std::vector<std::vector<std::string>> predictions, references;
};
void add_tag_sequences(TagSequences& out, std::span<const float> logits, std::span<const int32_t> labels, size_t rows,
                       size_t T, const std::vector<std::string>& label_names);

// run_ner's names: precision, recall, f1, accuracy (the overall figures); with entity_level
// (its return_entity_level_metrics) overall_precision, overall_recall, overall_f1,
// overall_accuracy and <TYPE>_precision, <TYPE>_recall, <TYPE>_f1, <TYPE>_number.
std::map<std::string, double> to_map(const SeqevalMetrics& m, bool entity_level = false);

}  // namespace strata
