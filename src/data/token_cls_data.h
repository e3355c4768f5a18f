// Token classification (NER, POS, chunking) data, as HF run_ner.py reads it: rows with a list
// of words (`tokens`) and a list of tags (`tags`), one per word; column names configurable as
// run_ner's text_column_name / label_column_name. JSON Lines rows hold the lists, CSV cells
// their JSON text. Tags are all strings or all integers.
//
// The tag set is fixed by the training split as run_ner fixes it for tags that are not a
// datasets ClassLabel: the sorted set of the training tags (strings in code-point order,
// integers numerically), id = position in that list. A tag of another split that training
// never had is an error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/record_scan.h"

namespace strata::data {

struct TokenClsColumns {
  std::string text = "tokens";
  std::string label = "tags";
};

struct TagSet {
  bool int_tags = false;           // integer tags; names are their decimal form
  std::vector<std::string> names;  // id -> name (run_ner's label_list, the config's id2label)
  // run_ner's b_to_i_label: the id of I-X for the id of B-X when I-X is in the set, else the
  // id itself. With label_all_tokens, a word's later sub-tokens get this tag.
  std::vector<int32_t> b_to_i;

  std::map<std::string, int32_t> label2id() const;
};

// A trained model's tag set, from config.json id2label; names that are all integers read
// integer tags.
TagSet tag_set_from_names(std::vector<std::string> names);

struct TokenClsDataset {
  std::string path;
  bool has_tags = true;  // false: a test file without the tags column (prediction only)
  std::vector<std::vector<std::string>> words;
  std::vector<std::vector<int32_t>> tags;  // tag ids, one per word; empty when !has_tags
  std::vector<size_t> lines;               // where each example is in the file

  size_t size() const { return words.size(); }
};

struct TokenClsOptions {
  std::string train_file, validation_file, test_file;  // "" = none
  TokenClsColumns columns;
  std::string format;  // "" = by extension (detect_format)
  char delimiter = 0;  // 0 = by format
  // Without a train_file, the tag set of the model being evaluated (its id2label).
  std::vector<std::string> label_names;
  WarnFn warn;  // receives each warning; default: "warning: ..." on stderr
};

struct TokenClsData {
  std::shared_ptr<const TokenClsDataset> train, validation, test;  // null when absent
  TagSet tags;
};

// Reads and checks every split; the test file may leave the tags column out (its first row
// decides). Throws strata::Error naming file, line and column for a
// missing column (with the nearest name), words or tags that are not lists of the right kind,
// words and tags of different lengths, a tag the training split does not have, and a file
// without examples.
TokenClsData load_token_cls(const TokenClsOptions& opts);

// run_ner's tokenize_and_align_labels for one example: per token, -100 for special tokens;
// the word's tag on its first token; on its other tokens -100, or with label_all_tokens the
// word's tag through b_to_i. word_ids as WordEncoding::word_ids.
std::vector<int32_t> align_labels(std::span<const int32_t> word_ids, std::span<const int32_t> word_tags,
                                  const TagSet& tags, bool label_all_tokens);

}  // namespace strata::data
