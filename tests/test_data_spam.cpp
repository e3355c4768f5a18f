// The shared spam corpus (../shared/data/spam, see its README): the CSV and JSON Lines
// copies, both gzipped, must read as the same 4734 / 592 / 592 rows with the documented labels.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "test_paths.h"

namespace strata::data {
namespace {

const std::string kSpamDir = test::shared_data_dir() + "/spam";

Datasets load_spam(const std::string& ext, std::vector<std::string>& warnings) {
  DataOptions o;
  o.train_file = kSpamDir + "/train." + ext + ".gz";
  o.validation_file = kSpamDir + "/validation." + ext + ".gz";
  o.test_file = kSpamDir + "/test." + ext + ".gz";
  o.warn = [&warnings](const std::string& m) { warnings.push_back(m); };
  return load_datasets(o);
}

TEST(DataSpam, CsvAndJsonlCopiesReadAlike) {
  if (!std::filesystem::exists(kSpamDir + "/train.csv.gz")) GTEST_SKIP() << "no spam corpus at " << kSpamDir;
  std::vector<std::string> warnings;
  const Datasets csv = load_spam("csv", warnings), jsonl = load_spam("jsonl", warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();  // valid UTF-8, no empty texts

  ASSERT_EQ(csv.train->size(), 4734u);
  EXPECT_EQ(csv.validation->size(), 592u);
  EXPECT_EQ(csv.test->size(), 592u);
  EXPECT_EQ(csv.labels.problem, ProblemType::SingleLabel);
  EXPECT_EQ(csv.labels.id2label, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(jsonl.labels.id2label, csv.labels.id2label);
  size_t counts[2] = {0, 0};
  for (size_t i = 0; i < csv.train->size(); ++i) ++counts[csv.train->label(i)];
  EXPECT_EQ(counts[0], 3287u);
  EXPECT_EQ(counts[1], 1447u);

  for (const auto& [a, b] : {std::pair{csv.train, jsonl.train}, std::pair{csv.validation, jsonl.validation},
                             std::pair{csv.test, jsonl.test}}) {
    ASSERT_EQ(a->size(), b->size());
    std::string ta, tb, pa, pb;
    size_t multiline = 0;
    for (size_t i = 0; i < a->size(); ++i) {
      a->texts(i, ta, pa);
      b->texts(i, tb, pb);
      ASSERT_EQ(ta, tb) << a->path() << " line " << a->line(i) << " vs " << b->path() << " line " << b->line(i);
      ASSERT_EQ(a->label(i), b->label(i)) << a->path() << " line " << a->line(i);
      multiline += ta.find('\n') != std::string::npos;
    }
    EXPECT_GT(multiline, a->size() / 2);           // the CSV's quoted fields span lines
    EXPECT_EQ(b->line(b->size() - 1), b->size());  // JSON Lines: one record per line
  }
}

}  // namespace
}  // namespace strata::data
