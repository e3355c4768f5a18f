// What labels mean, fixed by the training split as HF run_glue.py fixes them: the problem
// type (unless the caller sets it), the number of labels and their names (id2label /
// label2id, which the trainer writes into config.json), then every split's labels mapped to
// class ids or float targets. Rules, by what the training labels are:
//   integers          -> single-label; the integer is the class id ("ints as they are"),
//                        num_labels = max + 1, names "0", "1", ...
//   strings           -> single-label; ids in sorted name order
//   numbers, some non-integer (or problem_type regression) -> regression, 1 target
//   lists of names    -> multi-label; ids in sorted name order, multi-hot targets
//   lists of 0/1      -> multi-label; num_labels = list length
//   lists of numbers  -> regression with list-length targets
// A validation/test label the training split never had is an error naming file, line, label.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "data/raw_label.h"
#include "core/problem_type.h"

namespace strata::data {

struct LabelInfo {
  enum class Source { None, Ints, Names, Numbers, MultiHot, NameLists, NumberLists };
  Source source = Source::None;              // None: unlabelled data (masked LM)
  ProblemType problem = ProblemType::Unset;  // Unset with Source::None
  int num_labels = 0;
  std::vector<std::string> id2label;  // [num_labels]
  std::vector<uint8_t> in_training;   // [num_labels]: ids the training split holds

  std::map<std::string, int> label2id() const;
  bool single_label() const { return problem == ProblemType::SingleLabel; }
};

// `requested` (Unset: infer) is the problem_type the user set. `path` and `lines` name records
// in errors.
LabelInfo infer_labels(const std::vector<RawLabel>& train, const std::vector<uint64_t>& lines, const std::string& path,
                       ProblemType requested);

struct MappedLabels {
  std::vector<int32_t> ids;     // single-label: one class id per record
  std::vector<double> targets;  // regression / multi-label: num_labels values per record
};

MappedLabels map_labels(const LabelInfo& info, const std::vector<RawLabel>& labels, const std::vector<uint64_t>& lines,
                        const std::string& path);

// The LabelInfo of a trained model, from its config.json id2label (ModelConfig::label_names),
// for predicting on new files: names "0", "1", ... read integer labels as ids, other names
// read string labels.
LabelInfo label_info_from_names(ProblemType problem, const std::vector<std::string>& id2label);

}  // namespace strata::data
