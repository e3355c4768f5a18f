// Reads one dataset file, whatever its format, into the columns a task uses: the text, the
// optional text pair and the label of every record, with the line each record starts on.
// Streaming keeps only each record's byte offset and re-reads its texts on demand with
// read_record_texts(), which returns exactly what the scan saw.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/file_bytes.h"
#include "data/raw_label.h"

namespace strata::data {

enum class Format { Csv, Jsonl, Text };

struct FileFormat {
  Format format = Format::Csv;
  char delimiter = ',';  // Csv only
};

// `format` "" picks by extension (after a .gz suffix): .csv; .tsv (tab-delimited CSV);
// .jsonl / .json / .ndjson (JSON Lines); .txt / .text (one example per line). Else one of
// "csv", "tsv", "jsonl", "json", "text". `delimiter` (0: by format) overrides the CSV one.
FileFormat detect_format(const std::string& path, const std::string& format, char delimiter);

struct Columns {
  std::string text = "text";
  // Further text columns, each appended to the text after text_delimiter (run_classification's
  // text_column_names "a,b,c" joins a, b and c into one text).
  std::vector<std::string> more_text;
  std::string text_delimiter = " ";
  std::string pair;             // "" = single texts
  std::string label = "label";  // "" = unlabelled (masked LM)
};

struct ScanOptions {
  Columns columns;
  bool labels_optional = false;  // the label column may be absent: then the file is unlabelled
  bool skip_empty_text = false;  // else an empty (or whitespace-only) text is an error
  bool keep_texts = true;        // false: keep byte offsets instead (streaming)
  // Plain text: blank (whitespace-only) lines are examples too, as HF's text loader yields
  // them; run_mlm without line_by_line tokenizes them ([CLS] [SEP] for BERT). Else dropped.
  bool keep_blank_lines = false;
};

// Where a record's texts are, for re-reading one record by its offset.
struct RecordLayout {
  FileFormat fmt;
  size_t csv_fields = 0;
  int text_col = -1, pair_col = -1;  // CSV field indices; -1 = none
  std::string text_key, pair_key;    // JSON Lines keys; "" = none
  std::vector<int> more_text_cols;           // CSV: Columns::more_text's field indices
  std::vector<std::string> more_text_keys;   // JSON Lines: Columns::more_text
  std::string text_delimiter;
};

struct ScannedFile {
  std::string path;
  std::shared_ptr<const FileBytes> file;  // kept only when !keep_texts
  RecordLayout layout;
  bool has_labels = false;
  std::vector<std::string> texts, pairs;  // keep_texts; pairs empty without a pair column
  std::vector<uint64_t> offsets;          // !keep_texts
  std::vector<RawLabel> labels;           // has_labels
  std::vector<uint64_t> lines;            // line each record starts on
  size_t skipped_empty = 0, first_skipped_line = 0;
  size_t utf8_replaced = 0, first_replaced_line = 0;

  size_t size() const { return lines.size(); }
  // The records at `rows` (in that order), e.g. a validation split carved out of train.
  ScannedFile subset(const std::vector<size_t>& rows) const;
};

// Throws strata::Error naming the file and line for malformed records, a missing column (with
// the columns there are and the nearest name), non-string text, and empty text (unless skipped).
ScannedFile scan_file(const std::string& path, const FileFormat& fmt, const ScanOptions& opts);

// The text and pair (or "") of the record starting at `offset` in `bytes`; invalid UTF-8
// repaired as in the scan.
void read_record_texts(std::string_view bytes, const RecordLayout& layout, uint64_t offset, std::string& text,
                       std::string& pair);

// The tail of a missing-column error: " (columns: a, b, c); did you mean 'b'?".
std::string columns_hint(const std::string& asked, const std::vector<std::string>& candidates);

}  // namespace strata::data
