// Sequence-to-sequence examples, as HF's run_summarization.py / run_translation.py read them:
// a source and a target text per row, from two columns (text_column, summary_column) or from
// a `translation` column of {language: text} objects (source_lang, target_lang). CSV cells of
// the translation column hold that object's JSON text. An unlabelled file (prediction) may
// lack the target.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/record_scan.h"

namespace strata::data {

struct Seq2SeqColumns {
  std::string source = "text", target = "summary";
  // Translation when both are set: the column `translation` holds {source_lang: ..., target_lang: ...}.
  std::string source_lang, target_lang;
  std::string translation = "translation";
};

struct Seq2SeqExample {
  std::string source, target;
  size_t line = 0;
};

struct Seq2SeqExamples {
  std::string path;
  bool has_targets = false;
  std::vector<Seq2SeqExample> examples;
};

// targets_optional: a file whose first row has no target is read as unlabelled. Throws
// strata::Error naming file, line and column for a missing column (with the nearest name), a
// value that is not a string (or, for translation, not an object holding both languages), an
// empty source, and a file without examples.
Seq2SeqExamples read_seq2seq_examples(const std::string& path, const FileFormat& fmt, const Seq2SeqColumns& columns,
                                      bool targets_optional, const WarnFn& warn = {});

}  // namespace strata::data
