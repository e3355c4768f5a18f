// The data layer: readers (CSV/TSV, JSON Lines, plain text, gzip), their error messages,
// label resolution, splits, streaming, collation, masked-LM batches and the loader's order
// guarantees (masking and pretraining data: test_pretraining_data.cpp). Tokenizer-free: a
// whitespace encoder stands in for the tokenizer.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "data/collator.h"
#include "data/csv_reader.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "data/lm_batches.h"
#include "data/sampler.h"
#include "data/text_batches.h"
#include "data/token_source.h"
#include "data/utf8.h"
#include "test_util_data.h"
#include "test_util_fs.h"
#include "util/error.h"

namespace strata::data {
namespace {

using test::epoch_batches;
using test::ScratchDir;
using test::write_text;

// ---- a whitespace "tokenizer": [CLS]=1 words [SEP]=2, pad 0, [MASK] 3, words hashed ----

constexpr int32_t kPad = 0, kCls = 1, kSep = 2, kMask = 3;
constexpr size_t kVocab = 1000;

int32_t word_id(std::string_view w) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : w) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return static_cast<int32_t>(4 + h % (kVocab - 4));
}

std::vector<int32_t> words(std::string_view text) {
  std::vector<int32_t> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    if (j > i) out.push_back(word_id(text.substr(i, j - i)));
    i = j;
  }
  return out;
}

// HF's single / pair post-processing with longest-first truncation to max_len.
std::shared_ptr<const TextEncoder> whitespace_encoder(size_t max_len) {
  FunctionEncoder::Spec s;
  s.max_length = max_len;
  s.pad_id = kPad;
  s.vocab_size = kVocab;
  s.mask_id = kMask;
  s.single = [max_len](std::string_view text) {
    std::vector<int32_t> w = words(text);
    if (max_len && w.size() + 2 > max_len) w.resize(max_len - 2);
    Encoded e;
    e.ids.push_back(kCls);
    e.ids.insert(e.ids.end(), w.begin(), w.end());
    e.ids.push_back(kSep);
    e.special_mask.assign(e.ids.size(), 0);
    e.special_mask.front() = e.special_mask.back() = 1;
    return e;  // no type ids: the collator fills zeros
  };
  s.pair = [max_len](std::string_view a, std::string_view b) {
    std::vector<int32_t> wa = words(a), wb = words(b);
    while (max_len && wa.size() + wb.size() + 3 > max_len) (wa.size() >= wb.size() ? wa : wb).pop_back();
    Encoded e;
    e.ids = {kCls};
    e.ids.insert(e.ids.end(), wa.begin(), wa.end());
    e.ids.push_back(kSep);
    e.type_ids.assign(e.ids.size(), 0);
    e.ids.insert(e.ids.end(), wb.begin(), wb.end());
    e.ids.push_back(kSep);
    e.type_ids.resize(e.ids.size(), 1);
    e.special_mask.assign(e.ids.size(), 0);
    e.special_mask[0] = e.special_mask[wa.size() + 1] = e.special_mask.back() = 1;
    return e;
  };
  return std::make_shared<FunctionEncoder>(std::move(s));
}

// ---- helpers ----

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_ERROR_HAS(stmt, ...)                                                               \
  do {                                                                                            \
    const std::string msg_ = error_of([&] { stmt; });                                             \
    ASSERT_FALSE(msg_.empty()) << "no error from " #stmt;                                         \
    for (const char* part : {__VA_ARGS__}) EXPECT_NE(msg_.find(part), std::string::npos) << msg_; \
  } while (0)

std::vector<CsvRecord> read_csv(std::string_view bytes, char delim = ',') {
  CsvReader r(bytes, delim, "t.csv");
  std::vector<CsvRecord> out;
  CsvRecord rec;
  while (r.next(rec)) out.push_back(rec);
  return out;
}


DataOptions options(const std::string& train, std::vector<std::string>* warnings = nullptr) {
  DataOptions o;
  o.train_file = train;
  if (warnings) o.warn = [warnings](const std::string& m) { warnings->push_back(m); };
  return o;
}

std::vector<std::string> all_texts(const TextDataset& d) {
  std::vector<std::string> out;
  std::string t, p;
  for (size_t i = 0; i < d.size(); ++i) {
    d.texts(i, t, p);
    out.push_back(p.empty() ? t : t + " || " + p);
  }
  return out;
}

void write_gz(const std::string& path, const std::string& content) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, content.data(), static_cast<unsigned>(content.size())), static_cast<int>(content.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

// A labelled corpus with quoted, multi-line and CRLF records: 23 rows, 3 classes.
std::string corpus_csv() {
  std::string s = "text,label\r\n";
  for (int i = 0; i < 23; ++i) {
    std::string text = "row " + std::to_string(i) + " word" + std::to_string(i % 5);
    if (i % 4 == 0) text += "\nsecond line, with a comma";
    if (i % 7 == 0) text += " and a \"\"quote\"\"";
    s += "\"" + text + "\"," + std::vector<std::string>{"neg", "pos", "neutral"}[i % 3] + "\r\n";
  }
  return s;
}

// ---- CSV ----

TEST(DataCsv, Rfc4180QuotingAndRecordEnds) {
  const std::string in =
      "a,b,c\r\n"
      "1,\"x, y\",\"say \"\"hi\"\"\"\r\n"
      "\"multi\nline\r\nfield\",,\"\"\n"
      "\r\n"
      "\n"
      "plain,\"\",last";
  const auto recs = read_csv(in);
  ASSERT_EQ(recs.size(), 4u);
  EXPECT_EQ(recs[0].fields, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(recs[1].fields, (std::vector<std::string>{"1", "x, y", "say \"hi\""}));
  EXPECT_EQ(recs[1].line, 2u);
  EXPECT_EQ(recs[2].fields, (std::vector<std::string>{"multi\nline\r\nfield", "", ""}));
  EXPECT_EQ(recs[2].line, 3u);
  EXPECT_EQ(recs[3].fields, (std::vector<std::string>{"plain", "", "last"}));  // no final newline
  EXPECT_EQ(recs[3].line, 8u);                                                 // two blank lines skipped
  EXPECT_EQ(in.substr(recs[3].begin, 5), "plain");
}

TEST(DataCsv, LfAndCrlfFilesReadAlike) {
  const auto lf = read_csv("t,l\nhello world,1\n\"a\nb\",0\n");
  const auto crlf = read_csv("t,l\r\nhello world,1\r\n\"a\nb\",0\r\n");
  ASSERT_EQ(lf.size(), crlf.size());
  for (size_t i = 0; i < lf.size(); ++i) EXPECT_EQ(lf[i].fields, crlf[i].fields);
  EXPECT_EQ(lf[2].fields[0], "a\nb");
}

TEST(DataCsv, QuoteInsideUnquotedFieldIsData) {
  const auto r = read_csv("a,b\n5\" tall,x\n");
  EXPECT_EQ(r[1].fields[0], "5\" tall");
}

TEST(DataCsv, TabDelimited) {
  const auto r = read_csv("a\tb\n\"x\ty\"\tz\n", '\t');
  EXPECT_EQ(r[1].fields, (std::vector<std::string>{"x\ty", "z"}));
}

TEST(DataCsv, UnterminatedQuoteNamesTheLineItOpened) {
  EXPECT_ERROR_HAS(read_csv("a,b\n1,2\n3,\"open\nstill open\nand more\n"),
                   "t.csv: line 3:", "unterminated quoted field", "opened on line 3");
}

TEST(DataCsv, WrongColumnCountNamesLineExpectedAndGot) {
  EXPECT_ERROR_HAS(read_csv("a,b\n1,2\n\"x\ny\",2,3\n"), "t.csv: line 3:", "expected 2 fields", "got 3");
  EXPECT_ERROR_HAS(read_csv("a,b\n1,2\n3\n"), "t.csv: line 3:", "expected 2 fields", "got 1");
}

TEST(DataCsv, CharacterAfterClosingQuoteIsAnError) {
  EXPECT_ERROR_HAS(read_csv("a,b\n\"x\"y,2\n"), "t.csv: line 2:", "after the closing quote");
}

// ---- files: formats, columns, policies ----

TEST(DataFiles, CsvTsvJsonlAndTextByExtension) {
  ScratchDir dir;
  write_text(dir.path("a.csv"), "\xEF\xBB\xBFtext,label\n\"hi, there\",1\nbye,0\n");  // Excel's BOM
  write_text(dir.path("a.tsv"), "text\tlabel\nhi, there\t1\nbye\t0\n");
  write_text(dir.path("a.jsonl"),
             "{\"text\": \"hi, there\", \"label\": 1}\n\n  \r\n{\"label\": 0, \"text\": \"bye\"}\r\n");
  for (const char* f : {"a.csv", "a.tsv", "a.jsonl"}) {
    const Datasets d = load_datasets(options(dir.path(f)));
    EXPECT_EQ(all_texts(*d.train), (std::vector<std::string>{"hi, there", "bye"})) << f;
    EXPECT_EQ(d.train->label(0), 1) << f;
    EXPECT_EQ(d.train->label(1), 0) << f;
  }
  write_text(dir.path("lm.txt"), "first line\n\n   \nsecond line\r\n");
  DataOptions o = options(dir.path("lm.txt"));
  o.columns.label = "";
  const Datasets d = load_datasets(o);
  EXPECT_EQ(all_texts(*d.train), (std::vector<std::string>{"first line", "second line"}));
  EXPECT_EQ(d.train->line(1), 4u);
  EXPECT_EQ(d.labels.source, LabelInfo::Source::None);
  EXPECT_ERROR_HAS(load_datasets(options(dir.path("lm.txt"))), "lm.txt", "no label column 'label'");
  write_text(dir.path("a.dat"), "x");
  EXPECT_ERROR_HAS(load_datasets(options(dir.path("a.dat"))), "a.dat", "cannot tell the format");
}

TEST(DataFiles, TextPairColumn) {
  ScratchDir dir;
  write_text(dir.path("p.csv"), "q,a,label\nwhat is it,a thing,1\n");
  DataOptions o = options(dir.path("p.csv"));
  o.columns.text = "q";
  o.columns.pair = "a";
  const Datasets d = load_datasets(o);
  EXPECT_TRUE(d.train->has_pair());
  EXPECT_EQ(all_texts(*d.train), (std::vector<std::string>{"what is it || a thing"}));
  TextBatches tb(d.train, whitespace_encoder(16), CollatorOptions{});
  const std::vector<size_t> idx = {0};
  const Batch b = tb.make(idx, 0);
  EXPECT_EQ(b.T, 8);
  EXPECT_EQ(b.token_type_ids, (std::vector<int32_t>{0, 0, 0, 0, 0, 1, 1, 1}));
}

TEST(DataFiles, InvalidJsonNamesFileLineAndColumn) {
  ScratchDir dir;
  write_text(dir.path("bad.jsonl"), "{\"text\": \"a\", \"label\": 1}\n\n{\"text\": \"b\", \"label\": }\n");
  EXPECT_ERROR_HAS(load_datasets(options(dir.path("bad.jsonl"))), "bad.jsonl: invalid JSON at line 3, column 24:");
  write_text(dir.path("arr.jsonl"), "[1, 2]\n");
  EXPECT_ERROR_HAS(load_datasets(options(dir.path("arr.jsonl"))),
                   "arr.jsonl: line 1: expected a JSON object, got array");
  write_text(dir.path("num.jsonl"), "{\"text\": 5, \"label\": 1}\n");
  EXPECT_ERROR_HAS(load_datasets(options(dir.path("num.jsonl"))), "num.jsonl: line 1: field 'text' is a JSON number");
}

TEST(DataFiles, MissingColumnListsColumnsAndSuggestsNearest) {
  ScratchDir dir;
  write_text(dir.path("c.csv"), "sentence,label\nhello,1\n");
  DataOptions o = options(dir.path("c.csv"));
  o.columns.text = "sentense";
  EXPECT_ERROR_HAS(load_datasets(o), "c.csv: no text column 'sentense'", "(columns: sentence, label)",
                   "did you mean 'sentence'?");
  o.columns.text = "sentence";
  o.columns.label = "lable";
  EXPECT_ERROR_HAS(load_datasets(o), "c.csv: no label column 'lable'", "did you mean 'label'?");
  write_text(dir.path("c.jsonl"), "{\"sentence\": \"hello\", \"label\": 1}\n{\"sentence\": \"x\", \"labels\": 1}\n");
  o = options(dir.path("c.jsonl"));
  o.columns.text = "txt";
  EXPECT_ERROR_HAS(load_datasets(o), "c.jsonl: line 1: no field 'txt'", "(columns: label, sentence)");
  o.columns.text = "sentence";
  EXPECT_ERROR_HAS(load_datasets(o), "c.jsonl: line 2: no label field 'label'", "did you mean 'labels'?");
}

TEST(DataFiles, EmptyTextIsAnErrorUnlessSkipped) {
  ScratchDir dir;
  write_text(dir.path("e.csv"), "text,label\nfine,1\n\"  \",0\n,1\nok,0\n");
  EXPECT_ERROR_HAS(load_datasets(options(dir.path("e.csv"))), "e.csv: line 3: empty text in column 'text'",
                   "skip_empty_text");
  std::vector<std::string> warnings;
  DataOptions o = options(dir.path("e.csv"), &warnings);
  o.skip_empty_text = true;
  const Datasets d = load_datasets(o);
  EXPECT_EQ(all_texts(*d.train), (std::vector<std::string>{"fine", "ok"}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("e.csv: skipped 2 row(s) with empty text (first at line 3)"), std::string::npos)
      << warnings[0];
  write_text(dir.path("n.jsonl"), "{\"text\": null, \"label\": 1}\n");
  EXPECT_ERROR_HAS(load_datasets(options(dir.path("n.jsonl"))), "n.jsonl: line 1: empty text");
}

TEST(DataFiles, InvalidUtf8IsReplacedWithOneWarning) {
  std::string s = "ok \xC3\xA9 \xE0\x80 end \xE1\x80";  // é stays; E0 80 is two errors; E1 80 one
  EXPECT_EQ(replace_invalid_utf8(s), 3u);
  EXPECT_EQ(s, "ok \xC3\xA9 \xEF\xBF\xBD\xEF\xBF\xBD end \xEF\xBF\xBD");
  std::string surrogate = "\xED\xA0\x80", valid4 = "\xF0\x9F\x98\x80";
  EXPECT_EQ(replace_invalid_utf8(surrogate), 3u);
  EXPECT_EQ(replace_invalid_utf8(valid4), 0u);

  ScratchDir dir;
  write_text(dir.path("u.csv"), "text,label\ngood,1\n\"bad \xFF byte\",0\nbad \xC0 again,1\n");
  write_text(dir.path("u.jsonl"),
             "{\"text\": \"good\", \"label\": 1}\n\n{\"text\": \"bad \xFF byte\", \"label\": 0}\n");
  for (const char* f : {"u.csv", "u.jsonl"}) {
    std::vector<std::string> warnings;
    const Datasets d = load_datasets(options(dir.path(f), &warnings));
    EXPECT_EQ(all_texts(*d.train)[1], "bad \xEF\xBF\xBD byte") << f;
    ASSERT_EQ(warnings.size(), 1u) << f;
    EXPECT_NE(warnings[0].find(std::string(f) + ": "), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("replaced by U+FFFD (first at line 3)"), std::string::npos) << warnings[0];
  }
}

TEST(DataFiles, GzipIsReadTransparentlyButNotStreamed) {
  ScratchDir dir;
  write_text(dir.path("plain.csv"), corpus_csv());
  write_gz(dir.path("packed.csv.gz"), corpus_csv());
  write_gz(dir.path("packed.jsonl.gz"), "{\"text\": \"zipped\", \"label\": 1}\n");
  const Datasets a = load_datasets(options(dir.path("plain.csv")));
  const Datasets b = load_datasets(options(dir.path("packed.csv.gz")));
  EXPECT_EQ(all_texts(*a.train), all_texts(*b.train));
  EXPECT_EQ(a.labels.id2label, b.labels.id2label);
  EXPECT_EQ(all_texts(*load_datasets(options(dir.path("packed.jsonl.gz"))).train),
            (std::vector<std::string>{"zipped"}));
  DataOptions o = options(dir.path("packed.csv.gz"));
  o.streaming = true;
  EXPECT_ERROR_HAS(load_datasets(o), "packed.csv.gz: streaming", "gunzip");
  std::string gz = test::read_text(dir.path("packed.csv.gz"));
  write_text(dir.path("cut.csv.gz"), gz.substr(0, gz.size() / 2));
  EXPECT_ERROR_HAS(load_datasets(options(dir.path("cut.csv.gz"))), "cut.csv.gz: corrupt gzip data");
}

// ---- labels ----

TEST(DataLabels, StringLabelsGetSortedIds) {
  ScratchDir dir;
  write_text(dir.path("s.csv"), corpus_csv());
  const Datasets d = load_datasets(options(dir.path("s.csv")));
  EXPECT_EQ(d.labels.problem, ProblemType::SingleLabel);
  EXPECT_EQ(d.labels.id2label, (std::vector<std::string>{"neg", "neutral", "pos"}));
  EXPECT_EQ(d.labels.label2id(), (std::map<std::string, int>{{"neg", 0}, {"neutral", 1}, {"pos", 2}}));
  EXPECT_EQ(d.train->label(0), 0);  // neg
  EXPECT_EQ(d.train->label(1), 2);  // pos
  EXPECT_EQ(d.train->label(2), 1);  // neutral
}

TEST(DataLabels, IntegerLabelsAreTheirOwnIds) {
  ScratchDir dir;
  write_text(dir.path("i.jsonl"), "{\"text\": \"a\", \"label\": 2}\n{\"text\": \"b\", \"label\": 0}\n");
  const Datasets d = load_datasets(options(dir.path("i.jsonl")));
  EXPECT_EQ(d.labels.num_labels, 3);
  EXPECT_EQ(d.labels.id2label, (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(d.train->label(0), 2);
  write_text(dir.path("neg.csv"), "text,label\na,-1\n");
  EXPECT_ERROR_HAS(load_datasets(options(dir.path("neg.csv"))), "neg.csv: line 2: label -1 is negative");
  write_text(dir.path("mix.jsonl"), "{\"text\": \"a\", \"label\": 1}\n{\"text\": \"b\", \"label\": \"x\"}\n");
  EXPECT_ERROR_HAS(load_datasets(options(dir.path("mix.jsonl"))), "mix.jsonl: line 1: label 1 is a number",
                   "line 2's label 'x' is a string");
}

TEST(DataLabels, UnseenValidationLabelNamesFileLineAndLabel) {
  ScratchDir dir;
  write_text(dir.path("train.csv"), "text,label\na,pos\nb,neg\n");
  write_text(dir.path("val.csv"), "text,label\nc,pos\n\"multi\nline\",maybe\n");
  DataOptions o = options(dir.path("train.csv"));
  o.validation_file = dir.path("val.csv");
  EXPECT_ERROR_HAS(load_datasets(o), "val.csv: line 3: label 'maybe' does not occur in the training data",
                   "(training labels: neg, pos)");
  write_text(dir.path("ti.csv"), "text,label\na,0\nb,2\n");
  write_text(dir.path("vi.csv"), "text,label\nc,1\n");
  o = options(dir.path("ti.csv"));
  o.validation_file = dir.path("vi.csv");
  EXPECT_ERROR_HAS(load_datasets(o), "vi.csv: line 2: label 1 does not occur in the training data",
                   "(training labels: 0, 2)");
}

TEST(DataLabels, RegressionAndMultiLabel) {
  ScratchDir dir;
  write_text(dir.path("r.csv"), "text,label\na,0.5\nb,3\n");
  Datasets d = load_datasets(options(dir.path("r.csv")));
  EXPECT_EQ(d.labels.problem, ProblemType::Regression);
  EXPECT_EQ(d.labels.num_labels, 1);
  EXPECT_EQ(d.train->targets(1)[0], 3.0);
  TextBatches tb(d.train, whitespace_encoder(8), CollatorOptions{});
  const std::vector<size_t> both = {1, 0};
  EXPECT_EQ(tb.make(both, 0).float_labels, (std::vector<double>{3.0, 0.5}));

  DataOptions o = options(dir.path("r.csv"));
  write_text(dir.path("ri.csv"), "text,label\na,1\nb,4\n");
  o.train_file = dir.path("ri.csv");
  o.problem_type = ProblemType::Regression;  // integers, but asked for regression
  EXPECT_EQ(load_datasets(o).labels.problem, ProblemType::Regression);

  write_text(dir.path("m.jsonl"),
             "{\"text\": \"a\", \"label\": [\"sports\", \"news\"]}\n{\"text\": \"b\", \"label\": []}\n"
             "{\"text\": \"c\", \"label\": [\"art\"]}\n");
  d = load_datasets(options(dir.path("m.jsonl")));
  EXPECT_EQ(d.labels.problem, ProblemType::MultiLabel);
  EXPECT_EQ(d.labels.id2label, (std::vector<std::string>{"art", "news", "sports"}));
  EXPECT_EQ(std::vector<double>(d.train->targets(0).begin(), d.train->targets(0).end()),
            (std::vector<double>{0, 1, 1}));

  write_text(dir.path("mh.csv"), "text,label\na,\"[0, 1, 1]\"\nb,\"[1, 0, 0]\"\n");
  d = load_datasets(options(dir.path("mh.csv")));
  EXPECT_EQ(d.labels.problem, ProblemType::MultiLabel);
  EXPECT_EQ(d.labels.num_labels, 3);
  EXPECT_EQ(d.train->targets(1)[0], 1.0);
  write_text(dir.path("mbad.csv"), "text,label\na,\"[0, 1]\"\nb,\"[1, 0, 0]\"\n");
  EXPECT_ERROR_HAS(load_datasets(options(dir.path("mbad.csv"))),
                   "mbad.csv: line 3: label list has 3 values, expected 2");
}

TEST(DataLabels, TestSplitMayBeUnlabelled) {
  ScratchDir dir;
  write_text(dir.path("train.csv"), "text,label\na,pos\nb,neg\n");
  write_text(dir.path("test.csv"), "text\nc\nd\n");
  DataOptions o = options(dir.path("train.csv"));
  o.test_file = dir.path("test.csv");
  const Datasets d = load_datasets(o);
  EXPECT_FALSE(d.test->has_labels());
  TextBatches tb(d.test, whitespace_encoder(8), CollatorOptions{});
  const std::vector<size_t> idx = {0, 1};
  const Batch b = tb.make(idx, 0);
  EXPECT_TRUE(b.labels.empty() && b.float_labels.empty());
  // Predicting with a trained model's names.
  const LabelInfo info = label_info_from_names(ProblemType::SingleLabel, {"0", "1"});
  EXPECT_EQ(info.source, LabelInfo::Source::Ints);
  write_text(dir.path("pred.jsonl"), "{\"text\": \"x\", \"label\": 1}\n");
  EXPECT_EQ(load_dataset(dir.path("pred.jsonl"), o, info, true)->label(0), 1);
}

// ---- splits ----

TEST(DataSplits, ValidationSplitPercentageIsSeededAndDisjoint) {
  ScratchDir dir;
  std::string csv = "text,label\n";
  for (int i = 0; i < 200; ++i) csv += "text" + std::to_string(i) + "," + std::to_string(i % 2) + "\n";
  write_text(dir.path("t.csv"), csv);
  auto split = [&](uint64_t seed) {
    DataOptions o = options(dir.path("t.csv"));
    o.validation_split_percentage = 10;
    o.seed = seed;
    return load_datasets(o);
  };
  const Datasets a = split(7), b = split(7), c = split(8);
  EXPECT_EQ(a.validation->size(), 20u);
  EXPECT_EQ(a.train->size(), 180u);
  EXPECT_EQ(all_texts(*a.validation), all_texts(*b.validation));
  EXPECT_EQ(all_texts(*a.train), all_texts(*b.train));
  EXPECT_NE(all_texts(*a.validation), all_texts(*c.validation));
  std::set<std::string> seen;
  for (const auto& t : all_texts(*a.train)) seen.insert(t);
  for (const auto& t : all_texts(*a.validation)) EXPECT_TRUE(seen.insert(t).second) << t;
  EXPECT_EQ(seen.size(), 200u);
  // Both halves keep file order; line numbers still name the file's lines.
  EXPECT_LT(a.validation->line(0), a.validation->line(1));
  std::string t, p;
  a.validation->texts(0, t, p);
  EXPECT_EQ(t, "text" + std::to_string(a.validation->line(0) - 2));
}

// ---- loader ----

struct LoaderFixture {
  ScratchDir dir;
  Datasets mem, stream;
  LoaderFixture() {
    write_text(dir.path("c.csv"), corpus_csv());
    DataOptions o = options(dir.path("c.csv"));
    mem = load_datasets(o);
    o.streaming = true;
    stream = load_datasets(o);
  }
  std::shared_ptr<const BatchMaker> maker(bool streaming, size_t max_len = 16) const {
    return std::make_shared<TextBatches>(streaming ? stream.train : mem.train, whitespace_encoder(max_len),
                                         CollatorOptions{max_len, false, 0});
  }
};

LoaderOptions loader_options(size_t batch, int workers, bool drop_last = false) {
  LoaderOptions l;
  l.batch_size = batch;
  l.num_workers = workers;
  l.drop_last = drop_last;
  l.seed = 1234;
  return l;
}

TEST(DataLoader, StreamingGivesTheInMemoryBatches) {
  LoaderFixture f;
  EXPECT_TRUE(f.stream.train->streaming());
  EXPECT_FALSE(f.mem.train->streaming());
  EXPECT_EQ(all_texts(*f.mem.train), all_texts(*f.stream.train));
  DataLoader a(f.maker(false), loader_options(4, 0)), b(f.maker(true), loader_options(4, 2));
  for (int64_t epoch = 0; epoch < 2; ++epoch) EXPECT_EQ(epoch_batches(a, epoch), epoch_batches(b, epoch));
  // The same holds for JSON Lines and plain text.
  write_text(f.dir.path("j.jsonl"), "{\"text\": \"a b\", \"label\": 1}\n\n{\"text\": \"c \\u00e9\", \"label\": 0}\n");
  write_text(f.dir.path("l.txt"), "x y\r\n\nz \xFF\n");
  for (const char* file : {"j.jsonl", "l.txt"}) {
    DataOptions o = options(f.dir.path(file));
    if (std::string(file) == "l.txt") o.columns.label = "";
    o.warn = [](const std::string&) {};
    const auto m = load_datasets(o);
    o.streaming = true;
    const auto s = load_datasets(o);
    EXPECT_EQ(all_texts(*m.train), all_texts(*s.train)) << file;
  }
}

TEST(DataLoader, BatchesDoNotDependOnTheWorkerCount) {
  LoaderFixture f;
  std::vector<std::vector<std::string>> runs;
  for (int workers : {0, 1, 2, 3}) {
    DataLoader dl(f.maker(false), loader_options(3, workers));
    std::vector<std::string> all;
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      const auto e = epoch_batches(dl, epoch);
      all.insert(all.end(), e.begin(), e.end());
    }
    runs.push_back(all);
  }
  EXPECT_EQ(runs[0].size(), 3u * 8u);  // ceil(23 / 3) batches per epoch
  for (size_t w = 1; w < runs.size(); ++w) EXPECT_EQ(runs[0], runs[w]) << w << " workers";
}

// Each text is tokenized once, in its first epoch; later epochs reuse the kept encoding and get
// the same batches as fresh encodings would give. Past the byte budget, texts are encoded
// every time.
TEST(DataLoader, EncodingsAreKeptAfterTheFirstEpoch) {
  LoaderFixture f;
  auto calls = std::make_shared<std::atomic<int>>(0);
  const auto counting = [&](size_t max_len) {
    FunctionEncoder::Spec s;
    const auto inner = whitespace_encoder(max_len);
    s.max_length = max_len;
    s.pad_id = kPad;
    s.vocab_size = kVocab;
    s.single = [inner, calls](std::string_view t) { ++*calls; return inner->encode(t); };
    s.pair = [inner, calls](std::string_view a, std::string_view b) { ++*calls; return inner->encode(a, b); };
    return std::make_shared<FunctionEncoder>(s);
  };
  const size_t n = f.mem.train->size();
  const auto kept = std::make_shared<TextBatches>(f.mem.train, counting(16), CollatorOptions{16, false, 0});
  DataLoader dl(kept, loader_options(4, 2));
  const auto e0 = epoch_batches(dl, 0);
  EXPECT_EQ(*calls, static_cast<int>(n));
  const auto e1 = epoch_batches(dl, 1);
  EXPECT_EQ(*calls, static_cast<int>(n));  // nothing tokenized again
  DataLoader fresh(f.maker(false), loader_options(4, 0));
  EXPECT_EQ(e0, epoch_batches(fresh, 0));
  EXPECT_EQ(e1, epoch_batches(fresh, 1));

  // A budget of 0 bytes keeps nothing: every epoch tokenizes every text.
  *calls = 0;
  const EncodedTexts none(f.mem.train, counting(16), 0);
  for (int epoch = 0; epoch < 2; ++epoch)
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(none.get(i).ids, whitespace_encoder(16)->encode(all_texts(*f.mem.train)[i]).ids);
  EXPECT_EQ(*calls, static_cast<int>(2 * n));
  EXPECT_EQ(none.kept_bytes(), 0u);
}

TEST(DataLoader, EpochsReshuffleAndEveryExampleComesOnce) {
  LoaderFixture f;
  DataLoader dl(f.maker(false), loader_options(5, 0));
  EXPECT_EQ(dl.num_batches(), 5u);  // 23 examples: the last batch has 3
  EXPECT_EQ(dl.num_examples(), 23u);
  std::vector<std::vector<size_t>> orders;
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<size_t> order;
    for (size_t j = 0; j < dl.num_batches(); ++j) {
      const auto ex = dl.batch_examples(epoch, j);
      EXPECT_EQ(ex.size(), j + 1 < dl.num_batches() ? 5u : 3u);
      order.insert(order.end(), ex.begin(), ex.end());
    }
    std::vector<size_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], i);
    orders.push_back(order);
  }
  EXPECT_NE(orders[0], orders[1]);
  const auto batches = epoch_batches(dl, 0);
  EXPECT_EQ(batches.size(), 5u);
  DataLoader dropping(f.maker(false), loader_options(5, 2, true));
  EXPECT_EQ(dropping.num_batches(), 4u);
  const auto dropped = epoch_batches(dropping, 0);
  EXPECT_EQ(dropped, std::vector<std::string>(batches.begin(), batches.begin() + 4));
  LoaderOptions in_order = loader_options(10, 0);
  in_order.shuffle = false;
  DataLoader eval(f.maker(false), in_order);
  EXPECT_EQ(eval.batch_examples(5, 2), (std::vector<size_t>{20, 21, 22}));
}

TEST(DataLoader, PermutationIsFixedAcrossPlatforms) {
  // Pinned values: a change here changes every run's data order.
  EXPECT_EQ(permutation(10, 42, rng_stream(RngDomain::Shuffle, 0)),
            (std::vector<size_t>{3, 4, 1, 9, 0, 8, 2, 6, 7, 5}));
  Draws d(1, 2);
  std::vector<int> counts(3, 0);
  for (int i = 0; i < 30000; ++i) ++counts[d.below(3)];
  for (int c : counts) EXPECT_NEAR(c, 10000, 400);
}

// Batches that take uneven time, so workers finish out of order; one example fails.
class UnevenMaker final : public BatchMaker {
 public:
  size_t size() const override { return 40; }
  Batch make(std::span<const size_t> examples, uint64_t epoch) const override {
    Batch b;
    b.B = static_cast<int>(examples.size());
    b.T = 1;
    for (size_t i : examples) {
      if (i == 33 && epoch == 1) fail("example 33 is broken");
      b.input_ids.push_back(static_cast<int32_t>(i));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200 * (examples[0] % 5)));
    return b;
  }
};

TEST(DataLoader, DeliversInOrderAndRethrowsAtTheFailingBatch) {
  const auto maker = std::make_shared<UnevenMaker>();
  DataLoader serial(maker, loader_options(2, 0)), parallel(maker, loader_options(2, 4));
  EXPECT_EQ(epoch_batches(serial, 0), epoch_batches(parallel, 0));
  for (DataLoader* dl : {&serial, &parallel}) {
    dl->start(1, 0);
    size_t delivered = 0;
    const std::string msg = error_of([&] {
      Batch b;
      while (dl->next(b)) ++delivered;
    });
    EXPECT_EQ(msg, "example 33 is broken");
    size_t failing = 0;
    while (failing < dl->num_batches()) {
      const auto ex = dl->batch_examples(1, failing);
      if (std::find(ex.begin(), ex.end(), size_t{33}) != ex.end()) break;
      ++failing;
    }
    EXPECT_EQ(delivered, failing);
  }
}

TEST(DataLoader, ResumeAtBatchKGivesTheRestOfTheEpoch) {
  LoaderFixture f;
  for (int workers : {0, 2}) {
    DataLoader dl(f.maker(true), loader_options(4, workers));
    const auto full = epoch_batches(dl, 3);
    for (size_t k : {size_t{0}, size_t{1}, size_t{4}, full.size()})
      EXPECT_EQ(epoch_batches(dl, 3, k),
                std::vector<std::string>(full.begin() + static_cast<std::ptrdiff_t>(k), full.end()))
          << "k=" << k;
    EXPECT_ERROR_HAS(dl.start(3, full.size() + 1), "cannot start at batch 7");
  }
}

TEST(DataLoader, ShardsAreDisjointAndComplete) {
  LoaderFixture f;
  for (size_t world : {1, 2, 3, 4}) {
    for (bool drop_last : {false, true}) {
      std::vector<std::unique_ptr<DataLoader>> ranks;
      for (size_t r = 0; r < world; ++r) {
        LoaderOptions l = loader_options(3, 0, drop_last);
        l.rank = r;
        l.world_size = world;
        ranks.push_back(std::make_unique<DataLoader>(f.maker(false), l));
      }
      LoaderOptions global = loader_options(3 * world, 0, drop_last);
      DataLoader one(f.maker(false), global);
      ASSERT_EQ(ranks[0]->num_batches(), one.num_batches());
      std::multiset<size_t> seen;
      for (size_t j = 0; j < one.num_batches(); ++j) {
        std::vector<size_t> joined;
        size_t smallest = SIZE_MAX, largest = 0;
        for (auto& r : ranks) {
          ASSERT_EQ(r->num_batches(), one.num_batches());
          const auto ex = r->batch_examples(1, j);
          joined.insert(joined.end(), ex.begin(), ex.end());
          smallest = std::min(smallest, ex.size());
          largest = std::max(largest, ex.size());
        }
        EXPECT_EQ(joined, one.batch_examples(1, j));  // the ranks' batches j make global batch j
        EXPECT_LE(largest - smallest, 1u);
        seen.insert(joined.begin(), joined.end());
      }
      const size_t expect = drop_last ? 23 / (3 * world) * 3 * world : 23;
      EXPECT_EQ(seen.size(), expect) << "world " << world;
      EXPECT_EQ(std::set<size_t>(seen.begin(), seen.end()).size(), expect);  // no duplicates
    }
  }
  // 23 examples over 4 ranks of batch 3: the last global batch (11) splits 3/3/3/2.
  LoaderOptions l = loader_options(3, 1);
  l.world_size = 4;
  l.rank = 3;
  DataLoader last(f.maker(false), l);
  const auto batches = epoch_batches(last, 0);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(last.batch_examples(0, 1).size(), 2u);
}

// ---- collation ----

TEST(DataCollator, DynamicMultipleOfAndFixedPadding) {
  Encoded a, b;
  a.ids = {1, 7, 8, 2};
  b.ids = {1, 9, 2};
  b.type_ids = {0, 0, 0};
  Batch d = collate({a, b}, CollatorOptions{128, false, 0}, 5);
  EXPECT_EQ(d.B, 2);
  EXPECT_EQ(d.T, 4);
  EXPECT_EQ(d.input_ids, (std::vector<int32_t>{1, 7, 8, 2, 1, 9, 2, 5}));
  EXPECT_EQ(d.attention_mask, (std::vector<int32_t>{1, 1, 1, 1, 1, 1, 1, 0}));
  EXPECT_EQ(d.token_type_ids, std::vector<int32_t>(8, 0));
  EXPECT_EQ(collate({a, b}, CollatorOptions{128, false, 8}, 5).T, 8);
  EXPECT_EQ(collate({a, b}, CollatorOptions{6, true, 0}, 5).T, 6);
  EXPECT_EQ(collate({}, CollatorOptions{}, 0).B, 0);
}

TEST(DataCollator, TruncationKeepsTheFinalSpecialToken) {
  Encoded e;
  e.ids = {1, 10, 11, 12, 13, 2};
  e.special_mask = {1, 0, 0, 0, 0, 1};
  std::vector<int32_t> labels = {-100, 10, -100, 12, -100, -100};
  Batch b = collate({e}, CollatorOptions{4, false, 0}, 0, {labels});
  EXPECT_EQ(b.input_ids, (std::vector<int32_t>{1, 10, 11, 2}));
  EXPECT_EQ(b.labels, (std::vector<int32_t>{-100, 10, -100, -100}));
  Encoded plain;
  plain.ids = {5, 6, 7};
  EXPECT_EQ(collate({plain}, CollatorOptions{2, false, 0}, 0).input_ids, (std::vector<int32_t>{5, 6}));
  // The encoder truncates too: long texts come out max_seq_length wide.
  const auto enc = whitespace_encoder(5);
  EXPECT_EQ(enc->encode("a b c d e f").ids.size(), 5u);
  EXPECT_EQ(enc->encode("a b c d e f", "g h").ids.size(), 5u);
}

// ---- masked LM ----

TEST(DataMlm, GroupedBlocksAndLoaderDeterminism) {
  ScratchDir dir;
  std::string text;
  for (int i = 0; i < 60; ++i) text += "line " + std::to_string(i) + std::string(i % 3 + 1, 'x') + " w w\n\n";
  write_text(dir.path("c.txt"), text);
  DataOptions o = options(dir.path("c.txt"));
  o.columns.label = "";
  const Datasets d = load_datasets(o);
  ASSERT_EQ(d.train->size(), 60u);
  const auto unlimited = whitespace_encoder(0);
  // Every line is [CLS] 4 words [SEP] = 6 tokens: 360 tokens -> 22 blocks of 16, 8 dropped.
  const auto blocks1 = std::make_shared<TokenBlocks>(*d.train, *unlimited, 16, 1);
  const TokenBlocks blocks3(*d.train, *unlimited, 16, 3);
  ASSERT_EQ(blocks1->size(), 22u);
  for (size_t i = 0; i < blocks1->size(); ++i) EXPECT_EQ(blocks1->get(i).ids, blocks3.get(i).ids);
  EXPECT_EQ(blocks1->get(1).ids[2], kCls);  // block 1 is tokens 16..31; token 18 opens line 3
  EXPECT_EQ(blocks1->get(0).special_mask[5], 1);
  EXPECT_ERROR_HAS((void)TokenBlocks(*d.train, *whitespace_encoder(8), 16, 1), "without truncation");

  std::vector<std::vector<std::string>> runs;
  for (int workers : {0, 1, 2, 3}) {
    const auto maker = std::make_shared<LmBatches>(blocks1, *unlimited, CollatorOptions{16, false, 0}, MaskedLm{0.15, 5});
    DataLoader dl(maker, loader_options(4, workers));
    auto e0 = epoch_batches(dl, 0), e1 = epoch_batches(dl, 1);
    EXPECT_NE(e0, e1);
    e0.insert(e0.end(), e1.begin(), e1.end());
    runs.push_back(e0);
  }
  for (size_t w = 1; w < runs.size(); ++w) EXPECT_EQ(runs[0], runs[w]);

  // Line by line: each text its own example, padded per batch, labels -100 on padding.
  const auto lines = std::make_shared<EncodedTexts>(d.train, whitespace_encoder(16));
  const LmBatches per_line(lines, *unlimited, CollatorOptions{16, false, 0}, MaskedLm{0.5, 5});
  const std::vector<size_t> idx = {0, 1, 2};
  const Batch b = per_line.make(idx, 0);
  EXPECT_EQ(b.T, 6);
  ASSERT_EQ(b.labels.size(), 18u);
  for (size_t i = 0; i < b.labels.size(); ++i)
    if (!b.attention_mask[i]) {
      EXPECT_EQ(b.labels[i], -100);
    }
}

}  // namespace
}  // namespace strata::data
