#include "data/dataset.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "data/sampler.h"
#include "util/console.h"
#include "util/error.h"

namespace strata::data {

namespace {

void default_warn(const std::string& msg) { console_warning(msg); }

ScannedFile scan(const std::string& path, const DataOptions& o, bool labels_optional) {
  ScanOptions so;
  so.columns = o.columns;
  so.labels_optional = labels_optional;
  so.skip_empty_text = o.skip_empty_text;
  so.keep_blank_lines = o.keep_blank_lines;
  so.keep_texts = !o.streaming;
  ScannedFile f = scan_file(path, detect_format(path, o.format, o.delimiter), so);
  const WarnFn& warn = o.warn ? o.warn : WarnFn(default_warn);
  if (f.utf8_replaced)
    warn(cat(path, ": ", f.utf8_replaced, " invalid UTF-8 sequence(s) replaced by U+FFFD (first at line ",
             f.first_replaced_line, ")"));
  if (f.skipped_empty)
    warn(
        cat(path, ": skipped ", f.skipped_empty, " row(s) with empty text (first at line ", f.first_skipped_line, ")"));
  if (f.size() == 0) fail(path, ": no examples", f.skipped_empty ? " (every row had empty text)" : "");
  return f;
}

std::shared_ptr<const TextDataset> finish(ScannedFile&& f, const LabelInfo& info) {
  MappedLabels m;
  if (f.has_labels && info.source != LabelInfo::Source::None) m = map_labels(info, f.labels, f.lines, f.path);
  return std::make_shared<const TextDataset>(std::move(f), std::move(m), info);
}

// Carves a seeded random `percent` of train out as validation; both keep file order.
std::pair<ScannedFile, ScannedFile> carve(const ScannedFile& train, double percent, uint64_t seed) {
  if (!(percent > 0 && percent < 100)) fail("validation_split_percentage: expected a value in (0, 100), got ", percent);
  const size_t n = train.size();
  const size_t n_val = static_cast<size_t>(std::llround(static_cast<double>(n) * percent / 100.0));
  if (n_val == 0 || n_val == n)
    fail(train.path, ": validation_split_percentage ", percent, " of its ", n, " rows leaves ",
         n_val == 0 ? "no validation rows" : "no training rows");
  const std::vector<size_t> perm = permutation(n, seed, rng_stream(RngDomain::ValidationSplit, 0));
  std::vector<size_t> val(perm.begin(), perm.begin() + static_cast<std::ptrdiff_t>(n_val));
  std::vector<size_t> rest(perm.begin() + static_cast<std::ptrdiff_t>(n_val), perm.end());
  std::sort(val.begin(), val.end());
  std::sort(rest.begin(), rest.end());
  return {train.subset(rest), train.subset(val)};
}

}  // namespace

TextDataset::TextDataset(ScannedFile&& scan, MappedLabels&& labels, const LabelInfo& info)
    : scan_(std::move(scan)),
      has_pair_(scan_.layout.pair_col >= 0 || !scan_.layout.pair_key.empty()),
      has_labels_(scan_.has_labels && info.source != LabelInfo::Source::None),
      ids_(std::move(labels.ids)),
      targets_(std::move(labels.targets)) {
  if (has_labels_ && !info.single_label()) width_ = static_cast<size_t>(info.num_labels);
  scan_.labels = {};
}

void TextDataset::texts(size_t i, std::string& text, std::string& pair) const {
  if (!scan_.file) {
    text = scan_.texts[i];
    if (has_pair_)
      pair = scan_.pairs[i];
    else
      pair.clear();
    return;
  }
  try {
    read_record_texts(scan_.file->bytes(), scan_.layout, scan_.offsets[i], text, pair);
  } catch (const Error& e) {
    fail(scan_.path, ": cannot re-read line ", scan_.lines[i], " at byte ", scan_.offsets[i],
         " (did the file change after it was indexed?): ", e.what());
  }
}

Datasets load_datasets(const DataOptions& o) {
  if (o.train_file.empty()) fail("train_file: not set (a training file is needed to fix the labels)");
  if (!o.validation_file.empty() && o.validation_split_percentage != 0)
    fail("validation_split_percentage: set together with validation_file; give one or the other");
  ScannedFile train = scan(o.train_file, o, false);
  ScannedFile val;
  bool have_val = false;
  if (!o.validation_file.empty()) {
    val = scan(o.validation_file, o, false);
    have_val = true;
  } else if (o.validation_split_percentage != 0) {
    auto [kept, carved] = carve(train, o.validation_split_percentage, o.seed);
    train = std::move(kept);
    val = std::move(carved);
    have_val = true;
  }
  Datasets d;
  if (!o.columns.label.empty()) d.labels = infer_labels(train.labels, train.lines, train.path, o.problem_type);
  d.train = finish(std::move(train), d.labels);
  if (have_val) d.validation = finish(std::move(val), d.labels);
  if (!o.test_file.empty()) d.test = finish(scan(o.test_file, o, true), d.labels);
  return d;
}

std::shared_ptr<const TextDataset> load_dataset(const std::string& path, const DataOptions& o, const LabelInfo& labels,
                                                bool labels_optional) {
  DataOptions opts = o;
  if (labels.source == LabelInfo::Source::None) opts.columns.label.clear();
  return finish(scan(path, opts, labels_optional), labels);
}

}  // namespace strata::data
