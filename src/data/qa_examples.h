// Extractive question answering examples, as HF run_qa.py reads them: `question`, `context`,
// `answers` in SQuAD shape {"text": [...], "answer_start": [...]} (an empty pair of lists is an
// unanswerable SQuAD v2 question), optional `id`; column names configurable as run_qa's
// question_column_name / context_column_name / answer_column_name. JSON Lines rows hold the
// answers dict itself, CSV cells its JSON text.
//
// answer_start counts Unicode code points, as a Python string index does, and so do the
// tokenizer's offsets (tok::Encoding::offsets); every answer is checked against its context
// here, once, so that later stages can trust it.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/record_scan.h"

namespace strata::data {

struct QaColumns {
  std::string question = "question";
  std::string context = "context";
  std::string answers = "answers";
  std::string id = "id";  // optional: without it, the 0-based row number is the id
};

struct QaAnswer {
  std::string text;
  size_t start = 0;  // code points into the context
};

struct QaExample {
  std::string id, question, context;
  std::vector<QaAnswer> answers;  // empty: no answer (SQuAD v2), or an unlabelled file
  size_t line = 0;
};

struct QaExamples {
  std::string path;
  bool has_answers = false;  // the file has an answers column
  std::vector<QaExample> examples;
};

// answers_optional: a file without the answers column is read as unlabelled (prediction).
// Throws strata::Error naming file, line and column for: a missing column (with the nearest
// name), a non-string question or context, an answers value not in SQuAD shape, text and
// answer_start lists of different lengths, an empty answer text, an answer whose text is not
// the context's text at answer_start, duplicate ids, and a file without examples.
QaExamples read_qa_examples(const std::string& path, const FileFormat& fmt, const QaColumns& columns,
                            bool answers_optional, const WarnFn& warn = {});

// The byte offset in `s` (valid UTF-8) of code point `cp`, or s.size() when cp is at or past
// the end: Python's s[a:b] on code points, for UTF-8 strings.
size_t byte_of_code_point(const std::string& s, size_t cp);

}  // namespace strata::data
