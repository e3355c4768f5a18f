// Sequence-to-sequence data (run_summarization / run_translation): examples from two columns
// or a translation column, batches with targets of their own length padded with -100, and the
// sentence splitting ROUGE-Lsum reads.
#include <gtest/gtest.h>

#include "data/record_scan.h"
#include "data/seq2seq_batches.h"
#include "data/tokenizer_encoder.h"
#include "test_util_fs.h"
#include "tokenizers/tokenizer.h"
#include "train/seq2seq_eval.h"

namespace strata {
namespace {

using data::Seq2SeqColumns;

data::Seq2SeqExamples read(const std::string& path, const Seq2SeqColumns& c, bool targets_optional = false) {
  return data::read_seq2seq_examples(path, data::detect_format(path, "", 0), c, targets_optional);
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Seq2SeqExamples, ReadsTwoColumnsOrATranslationColumn) {
  const test::ScratchDir dir;
  test::write_text(dir.path("sum.jsonl"), "{\"doc\": \"a long text\", \"sum\": \"short\"}\n"
                                          "{\"doc\": \"another one\", \"sum\": \"one\"}\n");
  Seq2SeqColumns c;
  c.source = "doc";
  c.target = "sum";
  const auto s = read(dir.path("sum.jsonl"), c);
  ASSERT_EQ(s.examples.size(), 2u);
  EXPECT_TRUE(s.has_targets);
  EXPECT_EQ(s.examples[1].source, "another one");
  EXPECT_EQ(s.examples[1].target, "one");
  EXPECT_EQ(s.examples[1].line, 2u);

  test::write_text(dir.path("tr.jsonl"), "{\"translation\": {\"en\": \"the house\", \"de\": \"das Haus\"}}\n");
  Seq2SeqColumns t;
  t.source_lang = "en";
  t.target_lang = "de";
  const auto tr = read(dir.path("tr.jsonl"), t);
  EXPECT_EQ(tr.examples.at(0).source, "the house");
  EXPECT_EQ(tr.examples.at(0).target, "das Haus");
  // a CSV cell holds the object's JSON text
  test::write_text(dir.path("tr.csv"), "translation\n\"{\"\"en\"\": \"\"a cat\"\", \"\"de\"\": \"\"eine Katze\"\"}\"\n");
  EXPECT_EQ(read(dir.path("tr.csv"), t).examples.at(0).target, "eine Katze");
}

TEST(Seq2SeqExamples, TargetsAreOptionalOnlyWhereAllowed) {
  const test::ScratchDir dir;
  test::write_text(dir.path("test.jsonl"), "{\"text\": \"a text\"}\n");
  const auto unlabelled = read(dir.path("test.jsonl"), {}, /*targets_optional=*/true);
  EXPECT_FALSE(unlabelled.has_targets);
  const std::string e = error_of([&] { read(dir.path("test.jsonl"), {}); });
  EXPECT_NE(e.find("test.jsonl"), std::string::npos) << e;
  EXPECT_NE(e.find("line 1"), std::string::npos) << e;
  EXPECT_NE(e.find("summary"), std::string::npos) << e;
}

TEST(Seq2SeqExamples, BadRowsNameFileLineAndColumn) {
  const test::ScratchDir dir;
  test::write_text(dir.path("a.jsonl"), "{\"text\": \"ok\", \"summary\": \"ok\"}\n{\"text\": 3, \"summary\": \"x\"}\n");
  std::string e = error_of([&] { read(dir.path("a.jsonl"), {}); });
  EXPECT_NE(e.find("line 2"), std::string::npos) << e;
  EXPECT_NE(e.find("'text'"), std::string::npos) << e;
  test::write_text(dir.path("b.jsonl"), "{\"text\": \"  \", \"summary\": \"x\"}\n");
  e = error_of([&] { read(dir.path("b.jsonl"), {}); });
  EXPECT_NE(e.find("empty"), std::string::npos) << e;
  test::write_text(dir.path("c.jsonl"), "{\"translation\": {\"en\": \"a\"}}\n");
  Seq2SeqColumns t;
  t.source_lang = "en";
  t.target_lang = "ro";
  e = error_of([&] { read(dir.path("c.jsonl"), t); });
  EXPECT_NE(e.find("'ro'"), std::string::npos) << e;
}

class Seq2SeqBatchesTest : public testing::Test {
 protected:
  Seq2SeqBatchesTest() : tok_(tok::Tokenizer::from_dir(test::reference_tokenizer("bpe-8k"))), encoder_(tok_, 0) {}

  std::shared_ptr<const data::Seq2SeqExamples> examples(std::vector<std::pair<std::string, std::string>> rows) {
    auto e = std::make_shared<data::Seq2SeqExamples>();
    e->path = "mem.jsonl";
    e->has_targets = true;
    for (auto& [s, t] : rows) e->examples.push_back({s, t, e->examples.size() + 1});
    return e;
  }
  std::vector<int32_t> ids(const std::string& text) { return encoder_.encode(text).ids; }

  tok::Tokenizer tok_;
  data::TokenizerEncoder encoder_;
};

// The source (with its prefix) as any text batch; targets with their special tokens, padded
// with -100 to the longest target of the batch.
TEST_F(Seq2SeqBatchesTest, TargetsKeepTheirLengthAndArePaddedWithMinus100) {
  data::Seq2SeqBatchOptions o;
  o.source_prefix = "summarize: ";
  const data::Seq2SeqBatches batches(examples({{"the first text is here", "first"}, {"second", "the second one"}}),
                                     encoder_, o);
  const size_t order[] = {0, 1};
  const Batch b = batches.make(order, 0);
  const auto s0 = ids("summarize: the first text is here"), t0 = ids("first"), t1 = ids("the second one");
  ASSERT_EQ(b.T, static_cast<int>(s0.size()));
  EXPECT_EQ(std::vector<int32_t>(b.input_ids.begin(), b.input_ids.begin() + b.T), s0);
  ASSERT_EQ(b.Td, static_cast<int>(t1.size()));
  EXPECT_EQ(std::vector<int32_t>(b.labels.begin() + b.Td, b.labels.end()), t1);
  std::vector<int32_t> row0(b.labels.begin(), b.labels.begin() + b.Td), expect0 = t0;
  expect0.resize(t1.size(), -100);
  EXPECT_EQ(row0, expect0);
  EXPECT_EQ(t0.back(), 2);  // </s>: the tokenizer's own special tokens
}

TEST_F(Seq2SeqBatchesTest, TruncationKeepsTheFinalSpecialTokenAndIsReportedOnce) {
  data::Seq2SeqBatchOptions o;
  o.max_source_length = 4;
  o.max_target_length = 3;
  std::vector<std::string> warnings;
  const data::Seq2SeqBatches batches(
      examples({{"one two three four five", "a b c d"}, {"x", "y"}, {"six seven", "e f g h"}}), encoder_, o,
      [&](const std::string& w) { warnings.push_back(w); });
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("2 of 3 targets"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("line 1"), std::string::npos) << warnings[0];
  const size_t order[] = {0};
  const Batch b = batches.make(order, 0);
  EXPECT_EQ(b.T, 4);
  EXPECT_EQ(b.input_ids.back(), 2);
  EXPECT_EQ(b.Td, 3);
  EXPECT_EQ(b.labels.front(), 0);
  EXPECT_EQ(b.labels.back(), 2);
}

TEST_F(Seq2SeqBatchesTest, PaddingToMaxLengthAndMultiples) {
  data::Seq2SeqBatchOptions o;
  o.max_source_length = 12;
  o.max_target_length = 10;
  o.pad_to_max_length = true;
  const size_t order[] = {0};
  {
    const data::Seq2SeqBatches batches(examples({{"a text", "short"}}), encoder_, o);
    const Batch b = batches.make(order, 0);
    EXPECT_EQ(b.T, 12);
    EXPECT_EQ(b.Td, 10);
    EXPECT_EQ(b.labels.back(), -100);
  }
  o.ignore_pad_token_for_loss = false;  // run_summarization keeps the pad id then
  {
    const data::Seq2SeqBatches batches(examples({{"a text", "short"}}), encoder_, o);
    EXPECT_EQ(batches.make(order, 0).labels.back(), 1);
  }
  o.pad_to_max_length = false;
  o.pad_to_multiple_of = 8;
  {
    const data::Seq2SeqBatches batches(examples({{"a text", "short"}}), encoder_, o);
    const Batch b = batches.make(order, 0);
    EXPECT_EQ(b.T, 8);
    EXPECT_EQ(b.Td, 8);
  }
}

TEST(Seq2SeqEval, SentencesPerLineSplitsAfterSentenceEnds) {
  EXPECT_EQ(sentences_per_line("  One. Two!  \"Three?\" four\n five. "), "One.\nTwo!\n\"Three?\"\nfour five.");
  EXPECT_EQ(sentences_per_line("no end"), "no end");
  EXPECT_EQ(sentences_per_line(""), "");
}

}  // namespace
}  // namespace strata
