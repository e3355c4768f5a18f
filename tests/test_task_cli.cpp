// `strata train / evaluate / predict` end to end for the tasks beyond sequence classification:
// token classification (run_ner), question answering (run_qa) and causal LM (run_clm), on tiny
// models and data written here. What each writes is what HF's scripts write; a trained
// output_dir evaluates back to the same metrics; bad data stops before any work.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util_fs.h"

namespace strata {
namespace {

using test::read_text;
using test::run_strata;
using test::ScratchDir;
using test::write_text;
using json = nlohmann::json;

const std::string kBertTokenizer = test::source_dir() + "/examples/spam/bert-small";
const std::string kBpeTokenizer = test::fixture_dir() + "/tokenizers/reference/bpe-8k";

json bert_config(const char* architecture) {
  return {{"model_type", "bert"}, {"architectures", {architecture}}, {"vocab_size", 8000}, {"hidden_size", 32},
          {"num_hidden_layers", 1}, {"num_attention_heads", 2}, {"intermediate_size", 64},
          {"max_position_embeddings", 64}, {"pad_token_id", 0}};
}

json read_json(const std::string& path) { return json::parse(read_text(path)); }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) out.push_back(text.substr(at, nl - at));
  return out;
}

std::string job_yaml(const ScratchDir& dir, const std::string& tokenizer, const std::string& extra) {
  const std::string y = dir.path("job.yaml");
  write_text(y, "model_name_or_path: " + dir.path("model") + "\ntokenizer_name: " + tokenizer +
                    "\noutput_dir: " + dir.path("out") +
                    "\nper_device_train_batch_size: 8\nper_device_eval_batch_size: 4\nnum_threads: 1\n"
                    "learning_rate: 3.0e-3\nsave_strategy: 'no'\nlogging_steps: 10\nseed: 7\n" + extra);
  return y;
}

// ---- token classification ----

// Words tagged by what they are: numbers B-NUM (a following "thousand" I-NUM), colours
// B-COL, anything else O. Learnable from the word alone.
json tagged_sentence(int i) {
  const char* fillers[] = {"the", "cat", "saw", "a", "house", "near", "river"};
  const char* colours[] = {"red", "blue", "green"};
  json words = json::array(), tags = json::array();
  for (int k = 0; k < 6; ++k) {
    const int kind = (i * 7 + k * 3) % 5;
    if (kind == 0) {
      words.push_back(std::to_string(10 + (i + k) % 80));
      tags.push_back("B-NUM");
      if ((i + k) % 2) {
        words.push_back("thousand");
        tags.push_back("I-NUM");
      }
    } else if (kind == 1) {
      words.push_back(colours[(i + k) % 3]);
      tags.push_back("B-COL");
    } else {
      words.push_back(fillers[(i * 3 + k) % 7]);
      tags.push_back("O");
    }
  }
  return {{"tokens", words}, {"tags", tags}};
}

class TokenClsCli : public testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.path("model"));
    write_text(dir_.path("model/config.json"), bert_config("BertForTokenClassification").dump());
    std::string train, val, test;
    for (int i = 0; i < 64; ++i) train += tagged_sentence(i).dump() + "\n";
    for (int i = 100; i < 110; ++i) val += tagged_sentence(i).dump() + "\n";
    for (int i = 200; i < 205; ++i) test += json{{"tokens", tagged_sentence(i)["tokens"]}}.dump() + "\n";
    write_text(dir_.path("train.jsonl"), train);
    write_text(dir_.path("val.jsonl"), val);
    write_text(dir_.path("test.jsonl"), test);
  }
  std::string yaml(const std::string& extra = "") {
    return job_yaml(dir_, kBertTokenizer,
                    "train_file: " + dir_.path("train.jsonl") + "\nvalidation_file: " + dir_.path("val.jsonl") +
                        "\nmax_seq_length: 32\nmax_steps: 40\neval_strategy: steps\neval_steps: 40\n" + extra);
  }
  ScratchDir dir_;
};

TEST_F(TokenClsCli, LearnsTagsReportsSeqevalAndPredictsUntaggedWords) {
  const auto r = run_strata({"train", yaml("do_predict: true\ntest_file: " + dir_.path("test.jsonl") +
                                           "\nreturn_entity_level_metrics: true\n")},
                            dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json eval = read_json(dir_.path("out/eval_results.json"));
  for (const char* k : {"eval_loss", "eval_overall_precision", "eval_overall_recall", "eval_overall_f1",
                        "eval_overall_accuracy", "eval_NUM_f1", "eval_COL_f1", "eval_NUM_number"})
    EXPECT_TRUE(eval.contains(k)) << k << " missing from " << eval.dump();
  EXPECT_GT(eval["eval_overall_accuracy"].get<double>(), 0.9) << eval.dump();
  // The model's labels are the sorted training tags (run_ner's label_list).
  const json cfg = read_json(dir_.path("out/config.json"));
  EXPECT_EQ(cfg["architectures"][0], "BertForTokenClassification");
  EXPECT_EQ(cfg["id2label"]["0"], "B-COL");
  EXPECT_EQ(cfg["id2label"]["3"], "O");
  EXPECT_EQ(cfg["id2label"].size(), 4u);
  // predictions.txt: one line per untagged test sentence, one tag per word.
  const auto lines = lines_of(read_text(dir_.path("out/predictions.txt")));
  ASSERT_EQ(lines.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    size_t n = 1;
    for (char c : lines[static_cast<size_t>(i)]) n += c == ' ';
    EXPECT_EQ(n, tagged_sentence(200 + i)["tokens"].size()) << lines[static_cast<size_t>(i)];
  }
  EXPECT_FALSE(std::filesystem::exists(dir_.path("out/predict_results.json")));  // untagged: no metrics

  // The trained output_dir evaluates back to the same numbers.
  const std::string again = job_yaml(dir_, kBertTokenizer,
                                     "validation_file: " + dir_.path("val.jsonl") + "\nmax_seq_length: 32\n"
                                     "return_entity_level_metrics: true\noutput_dir: " + dir_.path("re"));
  const std::string y2 = dir_.path("again.yaml");
  write_text(y2, read_text(again) + "\n");
  const auto e = run_strata({"evaluate", y2, "--set", "model_name_or_path=" + dir_.path("out")}, dir_);
  ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
  const json re = read_json(dir_.path("re/eval_results.json"));
  EXPECT_EQ(re["eval_overall_f1"], eval["eval_overall_f1"]);
  EXPECT_DOUBLE_EQ(re["eval_loss"].get<double>(), eval["eval_loss"].get<double>());
}

TEST_F(TokenClsCli, UnknownTagAndLengthMismatchNameFileAndLine) {
  std::string val = read_text(dir_.path("val.jsonl"));
  write_text(dir_.path("val.jsonl"), val + R"({"tokens": ["a", "b"], "tags": ["O", "B-PER"]})" + "\n");
  auto r = run_strata({"train", yaml()}, dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("val.jsonl: line 11: unknown tag 'B-PER'"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_.path("out")));

  write_text(dir_.path("val.jsonl"), val + R"({"tokens": ["a", "b"], "tags": ["O"]})" + "\n");
  r = run_strata({"train", yaml()}, dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("val.jsonl: line 11: 2 words"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_.path("out")));
}

// ---- question answering ----

// "Who has the <thing>?" over a context of who has what; one context is long enough to be
// cut into several windows.
json qa_row(int i, bool with_answer) {
  const char* names[] = {"anna", "bob", "carl", "dora", "emil", "fay"};
  const char* things[] = {"key", "map", "lamp", "book", "coin", "rope"};
  std::string context;
  const int n = i % 7 == 0 ? 12 : 4;
  std::string answer;
  size_t start = 0;
  const int asked = i % n;
  for (int k = 0; k < n; ++k) {
    const std::string who = names[(i + k) % 6], what = things[(i + 2 * k) % 6];
    if (k == asked) {
      start = context.size();
      answer = who;
    }
    context += who + " has the " + what + " " + std::to_string(k) + ". ";
  }
  json row = {{"id", "q" + std::to_string(i)},
              {"question", "who has the " + std::string(things[(i + 2 * asked) % 6]) + " " + std::to_string(asked) + "?"},
              {"context", context}};
  if (with_answer) row["answers"] = {{"text", {answer}}, {"answer_start", {start}}};
  return row;
}

class QaCli : public testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.path("model"));
    write_text(dir_.path("model/config.json"), bert_config("BertForQuestionAnswering").dump());
    std::string train, val, test;
    for (int i = 0; i < 48; ++i) train += qa_row(i, true).dump() + "\n";
    for (int i = 100; i < 108; ++i) val += qa_row(i, true).dump() + "\n";
    for (int i = 200; i < 204; ++i) test += qa_row(i, false).dump() + "\n";
    write_text(dir_.path("train.jsonl"), train);
    write_text(dir_.path("val.jsonl"), val);
    write_text(dir_.path("test.jsonl"), test);
  }
  std::string yaml(const std::string& extra = "") {
    return job_yaml(dir_, kBertTokenizer,
                    "train_file: " + dir_.path("train.jsonl") + "\nvalidation_file: " + dir_.path("val.jsonl") +
                        "\nmax_seq_length: 48\ndoc_stride: 16\nmax_steps: 6\neval_strategy: steps\neval_steps: 6\n" +
                        extra);
  }
  ScratchDir dir_;
};

TEST_F(QaCli, TrainsOnWindowsAndWritesRunQaOutputs) {
  const auto r = run_strata({"train", yaml("do_predict: true\ntest_file: " + dir_.path("test.jsonl") + "\n")}, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json eval = read_json(dir_.path("out/eval_results.json"));
  ASSERT_TRUE(eval.contains("eval_exact_match") && eval.contains("eval_f1")) << eval.dump();
  EXPECT_GE(eval["eval_f1"].get<double>(), eval["eval_exact_match"].get<double>());
  EXPECT_LE(eval["eval_f1"].get<double>(), 100.0);
  EXPECT_FALSE(eval.contains("eval_loss"));  // evaluation features carry no positions, as in run_qa
  EXPECT_GT(read_json(dir_.path("out/train_results.json"))["train_loss"].get<double>(), 0.0);
  // Every answer is a span of its context.
  const json answers = read_json(dir_.path("out/eval_predictions.json"));
  ASSERT_EQ(answers.size(), 8u);
  for (int i = 100; i < 108; ++i) {
    const std::string text = answers[qa_row(i, true)["id"].get<std::string>()];
    EXPECT_NE(qa_row(i, true)["context"].get<std::string>().find(text), std::string::npos) << text;
  }
  EXPECT_EQ(read_json(dir_.path("out/eval_nbest_predictions.json")).size(), 8u);
  EXPECT_EQ(read_json(dir_.path("out/predict_predictions.json")).size(), 4u);  // unlabelled test file
  EXPECT_FALSE(std::filesystem::exists(dir_.path("out/predict_results.json")));

  const auto e = run_strata({"evaluate", yaml(), "--set", "model_name_or_path=" + dir_.path("out"), "--set",
                             "output_dir=" + dir_.path("re")},
                            dir_);
  ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
  EXPECT_EQ(read_json(dir_.path("re/eval_results.json"))["eval_f1"], eval["eval_f1"]);
}

TEST_F(QaCli, BadAnswersAndStrideStopBeforeAnyWork) {
  json bad = qa_row(1, true);
  bad["answers"]["answer_start"][0] = 3;  // not where the text is
  write_text(dir_.path("val.jsonl"), read_text(dir_.path("val.jsonl")) + bad.dump() + "\n");
  auto r = run_strata({"train", yaml()}, dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("val.jsonl"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line 9"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_.path("out")));

  r = run_strata({"train", yaml(), "--set", "doc_stride=48"}, dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("doc_stride (48) must be smaller than max_seq_length (48)"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_.path("out")));
}

// ---- causal LM ----

TEST(ClmCli, TrainsGpt2ReportsPerplexityAndRefusesPredict) {
  ScratchDir dir;
  std::filesystem::create_directories(dir.path("model"));
  write_text(dir.path("model/config.json"),
             json{{"model_type", "gpt2"}, {"architectures", {"GPT2LMHeadModel"}}, {"vocab_size", 8000}, {"n_embd", 32},
                  {"n_layer", 1}, {"n_head", 2}, {"n_positions", 64}}
                 .dump());
  std::string text;
  const char* lines[] = {"the quick brown fox jumps over the lazy dog", "a meeting about the budget for monday",
                         "click here to win money now", "notes from the weekly review of the project"};
  for (int i = 0; i < 60; ++i) text += std::string(lines[i % 4]) + "\n";
  write_text(dir.path("train.txt"), text);
  write_text(dir.path("val.txt"), text.substr(0, 600));
  const std::string y = job_yaml(dir, kBpeTokenizer,
                                 "train_file: " + dir.path("train.txt") + "\nvalidation_file: " + dir.path("val.txt") +
                                     "\nblock_size: 32\nmax_steps: 4\n");
  const auto r = run_strata({"train", y}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json eval = read_json(dir.path("out/eval_results.json"));
  EXPECT_NEAR(eval["eval_perplexity"].get<double>(), std::exp(eval["eval_loss"].get<double>()), 1e-9);
  EXPECT_GE(eval["eval_accuracy"].get<double>(), 0.0);
  EXPECT_LE(eval["eval_accuracy"].get<double>(), 1.0);
  EXPECT_EQ(read_json(dir.path("out/config.json"))["architectures"][0], "GPT2LMHeadModel");

  const auto p = run_strata({"predict", y, "--set", "model_name_or_path=" + dir.path("out"), "--set",
                             "test_file=" + dir.path("val.txt"), "--set", "output_dir=" + dir.path("p")},
                            dir);
  EXPECT_NE(p.exit_code, 0);
  EXPECT_NE(p.err.find("writes no predictions"), std::string::npos) << p.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path("p")));
}

}  // namespace
}  // namespace strata
