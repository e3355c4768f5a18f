// Text datasets for training: train / validation / test splits read from CSV, TSV, JSON
// Lines or plain text (each optionally gzipped), with their labels resolved against the
// training split (labels.h). Examples are addressed by index, so any order can be drawn.
//
// Two storage modes give identical examples, hence identical batches:
//  - in memory: every text is held as a string;
//  - streaming (for files larger than memory): only each record's byte offset is held (8
//    bytes per record, plus its label); the file is memory-mapped and a record's text is
//    re-parsed from its offset when a batch needs it. An index rather than sequential reading
//    with a shuffle buffer keeps shuffling exact and the order the same as in memory. Gzip
//    files cannot be read at an offset, so streaming refuses them.
//
// Policies: a row whose text (or text pair) is empty or whitespace-only is an error naming
// file and line unless skip_empty_text is set (then skipped, with one warning per file
// giving the count and first line); blank lines of plain-text files are dropped, as in HF
// run_mlm's line_by_line, unless keep_blank_lines (its grouped texts keep them). Invalid
// UTF-8 is replaced by U+FFFD (utf8.h), with one warning per file giving the count and first
// line.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "data/labels.h"
#include "data/record_scan.h"

namespace strata::data {

using WarnFn = std::function<void(const std::string&)>;

struct DataOptions {
  std::string train_file, validation_file, test_file;  // "" = none
  // With no validation_file: this percentage of train, drawn at random with `seed`, becomes
  // the validation split (both keep file order).
  double validation_split_percentage = 0;
  uint64_t seed = 42;
  Columns columns;                                // text, text pair, label ("" = unlabelled)
  ProblemType problem_type = ProblemType::Unset;  // Unset: inferred from the training labels
  std::string format;                             // "" = by extension (detect_format)
  char delimiter = 0;                             // 0 = by format
  bool streaming = false;
  bool skip_empty_text = false;
  bool keep_blank_lines = false;  // plain text: blank lines are examples (grouped LM texts, as HF)
  WarnFn warn;  // receives each warning; default: "warning: ..." on stderr
};

class TextDataset {
 public:
  TextDataset(ScannedFile&& scan, MappedLabels&& labels, const LabelInfo& info);

  size_t size() const { return scan_.size(); }
  const std::string& path() const { return scan_.path; }
  bool streaming() const { return scan_.file != nullptr; }
  bool has_pair() const { return has_pair_; }
  bool has_labels() const { return has_labels_; }
  // Text and pair ("" without a pair column) of example i; safe from several threads.
  void texts(size_t i, std::string& text, std::string& pair) const;
  uint64_t line(size_t i) const { return scan_.lines[i]; }  // where example i starts in the file
  // Single-label class id, or the target_width() regression / multi-label targets.
  int32_t label(size_t i) const { return ids_[i]; }
  std::span<const double> targets(size_t i) const { return {targets_.data() + i * width_, width_}; }
  bool single_label() const { return !ids_.empty(); }
  size_t target_width() const { return width_; }

 private:
  ScannedFile scan_;  // texts, or the file and offsets; lines; raw labels dropped once mapped
  bool has_pair_, has_labels_;
  std::vector<int32_t> ids_;
  std::vector<double> targets_;
  size_t width_ = 0;
};

struct Datasets {
  std::shared_ptr<const TextDataset> train, validation, test;  // null when absent
  LabelInfo labels;                                            // from train; Source::None when the label column is ""
};

// Reads and checks every split. Throws strata::Error naming the file and line.
Datasets load_datasets(const DataOptions& opts);

// One more file (e.g. for prediction) against known labels; `labels_optional` lets it have no
// label column.
std::shared_ptr<const TextDataset> load_dataset(const std::string& path, const DataOptions& opts,
                                                const LabelInfo& labels, bool labels_optional);

}  // namespace strata::data
