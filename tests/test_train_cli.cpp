// `strata train / evaluate / predict` end to end on a tiny model and a small CSV, and the
// errors users meet first: bad configuration, bad data, a checkpoint of another model. Every
// error must exit non-zero, name the file (and line), and leave no output directory behind.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

const fs::path kTokenizer = fs::path(STRATA_SOURCE_DIR) / "examples" / "spam" / "bert-small";

struct CliResult {
  int code;
  std::string output;
};

CliResult run_strata(const std::string& args) {
  const fs::path out = fs::path(testing::TempDir()) / "strata_cli_output.txt";
  const std::string cmd = std::string(STRATA_BINARY) + " " + args + " > " + out.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  return {WEXITSTATUS(status), ss.str()};
}

class TrainCli : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) / ("train-cli-" + std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "model");
    write_model_config(dir_ / "model", 32);
    std::ofstream train(dir_ / "train.csv");
    train << "text,label\n";
    for (int i = 0; i < 24; ++i)
      train << "\"" << (i % 2 ? "win money now, click here" : "meeting notes for monday") << " " << i << "\","
            << (i % 2 ? "spam" : "ham") << "\n";
    std::ofstream val(dir_ / "val.csv");
    val << "text,label\n\"win money\",spam\n\"monday notes\",ham\n\"click to win\",spam\n";
  }
  static void write_model_config(const fs::path& d, int hidden) {
    std::ofstream(d / "config.json") << nlohmann::json{{"model_type", "bert"}, {"vocab_size", 8000},
                                                       {"hidden_size", hidden}, {"num_hidden_layers", 1},
                                                       {"num_attention_heads", 2}, {"intermediate_size", 64},
                                                       {"max_position_embeddings", 64}, {"pad_token_id", 3}}
                                            .dump();
  }
  fs::path write_yaml(const std::string& extra) {
    const fs::path y = dir_ / "job.yaml";
    std::ofstream(y) << "model_name_or_path: " << (dir_ / "model").string() << "\n"
                     << "tokenizer_name: " << kTokenizer.string() << "\n"
                     << "train_file: " << (dir_ / "train.csv").string() << "\n"
                     << "validation_file: " << (dir_ / "val.csv").string() << "\n"
                     << "output_dir: " << (dir_ / "out").string() << "\n"
                     << "max_seq_length: 16\nper_device_train_batch_size: 8\nmax_steps: 4\nlogging_steps: 2\n"
                     << "eval_strategy: steps\neval_steps: 2\nsave_steps: 2\nnum_threads: 2\nlearning_rate: 1e-3\n"
                     << extra;
    return y;
  }
  fs::path dir_;
};

TEST_F(TrainCli, TrainEvaluatePredictWriteWhatHfWrites) {
  const fs::path y = write_yaml("test_file: " + (dir_ / "val.csv").string() + "\ndo_predict: true\n");
  const CliResult r = run_strata("train " + y.string());
  ASSERT_EQ(r.code, 0) << r.output;
  const fs::path out = dir_ / "out";
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "vocab.txt", "train_results.json",
                        "eval_results.json", "test_results.json", "all_results.json", "trainer_log.jsonl",
                        "trainer_state.json", "predict_results.csv", "checkpoint-2/optimizer.safetensors",
                        "checkpoint-4/trainer_state.json"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  const auto cfg = nlohmann::json::parse(std::ifstream(out / "config.json"));
  EXPECT_EQ(cfg["id2label"], (nlohmann::json{{"0", "ham"}, {"1", "spam"}}));
  EXPECT_EQ(cfg["architectures"][0], "BertForSequenceClassification");
  const auto eval = nlohmann::json::parse(std::ifstream(out / "eval_results.json"));
  for (const char* k : {"eval_loss", "eval_accuracy", "eval_f1", "eval_matthews_correlation"}) EXPECT_TRUE(eval.contains(k)) << k;
  std::ifstream preds(out / "predict_results.csv");
  std::string header;
  std::getline(preds, header);
  EXPECT_EQ(header, "index,prediction,label,prob_ham,prob_spam");

  // The trained directory is a model directory: evaluate and predict read it back.
  const fs::path y2 = dir_ / "eval.yaml";
  std::ofstream(y2) << "model_name_or_path: " << out.string() << "\nvalidation_file: " << (dir_ / "val.csv").string()
                    << "\ntest_file: " << (dir_ / "val.csv").string() << "\noutput_dir: " << (dir_ / "eval_out").string()
                    << "\npredict_output_format: jsonl\n";
  const CliResult e = run_strata("evaluate " + y2.string());
  ASSERT_EQ(e.code, 0) << e.output;
  const auto again = nlohmann::json::parse(std::ifstream(dir_ / "eval_out" / "eval_results.json"));
  EXPECT_DOUBLE_EQ(again["eval_loss"].get<double>(), eval["eval_loss"].get<double>());
  const CliResult p = run_strata("predict " + y2.string());
  ASSERT_EQ(p.code, 0) << p.output;
  EXPECT_TRUE(fs::exists(dir_ / "eval_out" / "predict_results.jsonl"));
}

TEST_F(TrainCli, UnknownOptionSuggestsAndWritesNothing) {
  const CliResult r = run_strata("train " + write_yaml("learning_rte: 1e-3\n").string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("did you mean 'learning_rate'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("job.yaml"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(TrainCli, BadCsvNamesFileAndLineAndWritesNothing) {
  std::ofstream(dir_ / "train.csv") << "text,label\n\"fine\",ham\n\"never closed,spam\nmore\n";
  const CliResult r = run_strata("train " + write_yaml("").string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("train.csv"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("line 3"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(TrainCli, ValidationLabelUnseenInTrainingIsAnError) {
  std::ofstream(dir_ / "val.csv") << "text,label\n\"a\",ham\n\"b\",eggs\n";
  const CliResult r = run_strata("train " + write_yaml("").string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("val.csv"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("eggs"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(TrainCli, ResumingFromACheckpointOfAnotherModelIsRefused) {
  ASSERT_EQ(run_strata("train " + write_yaml("").string()).code, 0);
  write_model_config(dir_ / "model", 48);  // a different model now
  const CliResult r = run_strata("train " + write_yaml("resume_from_checkpoint: latest\n").string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("checkpoint-4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("shape"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "checkpoint-4" / "model.safetensors")) << "the checkpoint must survive";
}

TEST_F(TrainCli, NonEmptyOutputDirIsNotOverwrittenByAccident) {
  fs::create_directories(dir_ / "out");
  std::ofstream(dir_ / "out" / "precious.txt") << "keep";
  const CliResult r = run_strata("train " + write_yaml("").string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("overwrite_output_dir"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "precious.txt"));
}

}  // namespace
