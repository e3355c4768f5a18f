// `strata train / evaluate / predict` end to end on a tiny model and a small CSV, and the
// errors users meet first: bad configuration, bad data, a checkpoint of another model. Every
// error must exit non-zero, name the file (and line), and leave no output directory behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "test_util_fs.h"
#include "train/tensorboard_log.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::expect_command_error;
using test::run_strata;
using test::write_text;

const std::string kTokenizer = test::source_dir() + "/examples/spam/bert-small";

class TrainCli : public testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.path("model"));
    write_model_config(32);
    test::write_toy_spam_csvs(dir_);
  }
  void write_model_config(int hidden) {
    write_text(dir_.path("model/config.json"),
               json{{"model_type", "bert"}, {"vocab_size", 8000}, {"hidden_size", hidden}, {"num_hidden_layers", 1},
                    {"num_attention_heads", 2}, {"intermediate_size", 64}, {"max_position_embeddings", 64},
                    {"pad_token_id", 3}}
                   .dump());
  }
  std::string write_yaml(const std::string& extra) {
    const std::string y = dir_.path("job.yaml");
    write_text(y, "model_name_or_path: " + dir_.path("model") + "\ntokenizer_name: " + kTokenizer +
                      "\ntrain_file: " + dir_.path("train.csv") + "\nvalidation_file: " + dir_.path("val.csv") +
                      "\noutput_dir: " + dir_.path("out") +
                      "\nmax_seq_length: 16\nper_device_train_batch_size: 8\nmax_steps: 4\nlogging_steps: 2\n"
                      "eval_strategy: steps\neval_steps: 2\nsave_steps: 2\nnum_threads: 2\nlearning_rate: 1e-3\n" +
                      extra);
    return y;
  }
  test::ScratchDir dir_;
};

TEST_F(TrainCli, TrainEvaluatePredictWriteWhatHfWrites) {
  const std::string y = write_yaml("test_file: " + dir_.path("val.csv") + "\ndo_predict: true\n");
  const auto r = run_strata({"train", y}, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const fs::path out = dir_.path("out");
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "vocab.txt", "train_results.json",
                        "eval_results.json", "predict_results.json", "all_results.json", "trainer_log.jsonl",
                        "trainer_state.json", "predict_results.txt", "README.md", "checkpoint-2/optimizer.safetensors",
                        "checkpoint-4/trainer_state.json", "checkpoint-4/strata_state.json"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  EXPECT_FALSE(fs::exists(out / "test_results.json"));
  const auto cfg = json::parse(test::read_text(out / "config.json"));
  EXPECT_EQ(cfg["id2label"], (json{{"0", "ham"}, {"1", "spam"}}));
  EXPECT_EQ(cfg["architectures"][0], "BertForSequenceClassification");
  const auto eval = json::parse(test::read_text(out / "eval_results.json"));
  for (const char* k : {"eval_loss", "eval_accuracy", "eval_f1", "eval_matthews_correlation"}) EXPECT_TRUE(eval.contains(k)) << k;
  // The example scripts' <split>_samples counts, and predictions as run_classification writes them.
  EXPECT_EQ(json::parse(test::read_text(out / "train_results.json"))["train_samples"], 24);
  EXPECT_EQ(eval["eval_samples"], 3);
  EXPECT_EQ(json::parse(test::read_text(out / "predict_results.json"))["predict_samples"], 3);
  const std::string preds = test::read_text(out / "predict_results.txt");
  EXPECT_EQ(preds.substr(0, preds.find('\n')), "index\tprediction");
  EXPECT_EQ(std::count(preds.begin(), preds.end(), '\n'), 4) << preds;
  EXPECT_TRUE(preds.find("\n0\tspam\n") != std::string::npos || preds.find("\n0\tham\n") != std::string::npos) << preds;

  // The trained directory is a model directory: evaluate and predict read it back.
  const std::string y2 = dir_.path("eval.yaml");
  write_text(y2, "model_name_or_path: " + out.string() + "\nvalidation_file: " + dir_.path("val.csv") +
                     "\ntest_file: " + dir_.path("val.csv") + "\noutput_dir: " + dir_.path("eval_out") +
                     "\npredict_output_format: jsonl\n");
  const auto e = run_strata({"evaluate", y2}, dir_);
  ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
  const auto again = json::parse(test::read_text(dir_.path("eval_out/eval_results.json")));
  EXPECT_DOUBLE_EQ(again["eval_loss"].get<double>(), eval["eval_loss"].get<double>());
  const auto p = run_strata({"predict", y2}, dir_);
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_TRUE(fs::exists(dir_.path("eval_out/predict_results.jsonl")));
  ASSERT_EQ(run_strata({"predict", y2, "--set", "predict_output_format=csv"}, dir_).exit_code, 0);
  const std::string csv = test::read_text(dir_.path("eval_out/predict_results.csv"));
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "index,prediction,label,prob_ham,prob_spam");
}

// trainer_state.json holds exactly the fields of transformers 5's TrainerState: best_global_step
// and stateful_callbacks (TrainerControl as at the checkpoint, EarlyStoppingCallback's state).
TEST_F(TrainCli, TrainerStateHasTheFieldsOfTransformers5) {
  const std::string y = write_yaml("metric_for_best_model: accuracy\nearly_stopping_patience: 5\n"
                                   "early_stopping_threshold: 0.25\n");
  const auto r = run_strata({"train", y}, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const fs::path out = dir_.path("out");
  const std::set<std::string> hf_fields = {
      "best_global_step", "best_metric", "best_model_checkpoint", "epoch", "eval_steps", "global_step",
      "is_hyper_param_search", "is_local_process_zero", "is_world_process_zero", "log_history", "logging_steps",
      "max_steps", "num_input_tokens_seen", "num_train_epochs", "save_steps", "stateful_callbacks", "total_flos",
      "train_batch_size", "trial_name", "trial_params"};
  for (const char* f : {"checkpoint-2/trainer_state.json", "checkpoint-4/trainer_state.json", "trainer_state.json"}) {
    SCOPED_TRACE(f);
    const auto s = json::parse(test::read_text(out / f));
    std::set<std::string> fields;
    for (const auto& [k, v] : s.items()) fields.insert(k);
    EXPECT_EQ(fields, hf_fields);
    // The best checkpoint's step, in both fields.
    const std::string best = s["best_model_checkpoint"].get<std::string>();
    EXPECT_EQ(best, (out / ("checkpoint-" + std::to_string(s["best_global_step"].get<int64_t>()))).string());
    const json& control = s["stateful_callbacks"]["TrainerControl"];
    EXPECT_EQ(control["args"]["should_save"], true);
    // Training ends with the checkpoint of step 4; the root file keeps that state, as HF's save_state.
    EXPECT_EQ(control["args"]["should_training_stop"], std::string(f) != "checkpoint-2/trainer_state.json");
    EXPECT_EQ(control["attributes"], json::object());
    const json& early = s["stateful_callbacks"]["EarlyStoppingCallback"];
    EXPECT_EQ(early["args"], (json{{"early_stopping_patience", 5}, {"early_stopping_threshold", 0.25}}));
    EXPECT_TRUE(early["attributes"]["early_stopping_patience_counter"].is_number_integer());
  }
  // Without early stopping there is no such callback to record.
  const auto plain = run_strata({"train", write_yaml("overwrite_output_dir: true\n")}, dir_);
  ASSERT_EQ(plain.exit_code, 0) << plain.out << plain.err;
  const auto s = json::parse(test::read_text(out / "trainer_state.json"));
  EXPECT_FALSE(s["stateful_callbacks"].contains("EarlyStoppingCallback"));
  EXPECT_TRUE(s["best_global_step"].is_null());
}

TEST_F(TrainCli, UnknownOptionSuggestsAndWritesNothing) {
  expect_command_error(run_strata({"train", write_yaml("learning_rte: 1e-3\n")}, dir_),
                       {"did you mean 'learning_rate'", "job.yaml"});
  EXPECT_FALSE(fs::exists(dir_.path("out")));
}

TEST_F(TrainCli, BadCsvNamesFileAndLineAndWritesNothing) {
  write_text(dir_.path("train.csv"), "text,label\n\"fine\",ham\n\"never closed,spam\nmore\n");
  expect_command_error(run_strata({"train", write_yaml("")}, dir_), {"train.csv", "line 3"});
  EXPECT_FALSE(fs::exists(dir_.path("out")));
}

TEST_F(TrainCli, ValidationLabelUnseenInTrainingIsAnError) {
  write_text(dir_.path("val.csv"), "text,label\n\"a\",ham\n\"b\",eggs\n");
  expect_command_error(run_strata({"train", write_yaml("")}, dir_), {"val.csv", "eggs"});
  EXPECT_FALSE(fs::exists(dir_.path("out")));
}

TEST_F(TrainCli, ResumingFromACheckpointOfAnotherModelIsRefused) {
  ASSERT_EQ(run_strata({"train", write_yaml("")}, dir_).exit_code, 0);
  write_model_config(48);  // a different model now
  expect_command_error(run_strata({"train", write_yaml("resume_from_checkpoint: latest\n")}, dir_),
                       {"checkpoint-4", "shape"});
  EXPECT_TRUE(fs::exists(dir_.path("out/checkpoint-4/model.safetensors"))) << "the checkpoint must survive";
}

TEST_F(TrainCli, NonEmptyOutputDirIsNotOverwrittenByAccident) {
  fs::create_directories(dir_.path("out"));
  write_text(dir_.path("out/precious.txt"), "keep");
  expect_command_error(run_strata({"train", write_yaml("")}, dir_), {"overwrite_output_dir"});
  EXPECT_TRUE(fs::exists(dir_.path("out/precious.txt")));
}

// The determinism policy (docs/numerics.md): a run repeated with the same thread count writes
// the same weights, and with full_determinism (HF's name) so does a run on another thread
// count. Dropout is on (BERT's default 0.1), so the masks are part of what must repeat.
TEST_F(TrainCli, TwoRunsOnTwoThreadsWriteTheSameWeights) {
  const std::string y = write_yaml("");
  for (const char* out : {"run1", "run2"}) {
    const auto r = run_strata({"train", y, "--set", std::string("output_dir=") + dir_.path(out)}, dir_);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  EXPECT_EQ(test::read_text(dir_.path("run1/model.safetensors")), test::read_text(dir_.path("run2/model.safetensors")));
}

TEST_F(TrainCli, FullDeterminismWritesTheSameWeightsOnOneAndTwoThreads) {
  const std::string y = write_yaml("full_determinism: true\n");
  for (const char* threads : {"1", "2"}) {
    const auto r = run_strata({"train", y, "--set", std::string("output_dir=") + dir_.path(std::string("t") + threads),
                               "--set", std::string("num_threads=") + threads},
                              dir_);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  EXPECT_EQ(test::read_text(dir_.path("t1/model.safetensors")), test::read_text(dir_.path("t2/model.safetensors")));
}

// report_to on the command line, HF-style: TensorBoard events under HF's default
// output_dir/runs/<time>_<host> and trainer_log.csv hold every value of trainer_log.jsonl.
TEST_F(TrainCli, ReportToWritesTensorBoardAndCsvCurves) {
  const auto r = run_strata({"train", write_yaml("report_to: none\n"), "--report_to", "tensorboard", "csv"}, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<json> logged;
  std::ifstream jsonl(dir_.path("out/trainer_log.jsonl"));
  for (std::string line; std::getline(jsonl, line);) logged.push_back(json::parse(line));
  ASSERT_GE(logged.size(), 4u);  // losses and evaluations at steps 2 and 4, the train summary

  std::vector<fs::path> events;
  for (const auto& e : fs::recursive_directory_iterator(dir_.path("out/runs")))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) events.push_back(e.path());
  ASSERT_EQ(events.size(), 1u);
  const std::vector<TensorBoardScalar> scalars = read_tensorboard_scalars(events[0].string());
  size_t numbers = 0;
  for (const json& entry : logged)
    for (const auto& [key, value] : entry.items()) {
      if (key == "step" || !value.is_number()) continue;
      ++numbers;
      const std::string tag = tensorboard_tag(key);
      const auto hit = std::find_if(scalars.begin(), scalars.end(), [&](const TensorBoardScalar& s) {
        return s.tag == tag && s.step == entry["step"].get<int64_t>() && s.value == value.get<float>();
      });
      EXPECT_NE(hit, scalars.end()) << tag << " at step " << entry["step"];
    }
  EXPECT_EQ(scalars.size(), numbers);
  for (const char* tag : {"train/loss", "train/learning_rate", "eval/loss", "eval/f1"})
    EXPECT_TRUE(std::any_of(scalars.begin(), scalars.end(), [&](const auto& s) { return s.tag == tag; })) << tag;

  std::ifstream csv(dir_.path("out/trainer_log.csv"));
  std::string header, row;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("step,epoch,", 0), 0u) << header;
  for (const char* column : {",loss", ",eval_loss", ",eval_f1", ",train_runtime"})
    EXPECT_NE(header.find(column), std::string::npos) << column << " not in " << header;
  size_t rows = 0;
  while (std::getline(csv, row)) ++rows;
  EXPECT_EQ(rows, logged.size());

  // logging_dir puts the events (and trainer_log.jsonl) there; report_to none writes no events.
  const auto none = run_strata({"train", write_yaml("overwrite_output_dir: true\n"), "--report_to", "none",
                                "--logging_dir", dir_.path("tb")},
                               dir_);
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_.path("tb")), fs::directory_iterator()), 1);  // the jsonl
  const auto tb = run_strata({"train", write_yaml("overwrite_output_dir: true\n"), "--report_to=tensorboard",
                              "--logging_dir", dir_.path("tb")},
                             dir_);
  ASSERT_EQ(tb.exit_code, 0) << tb.err;
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_.path("tb")), fs::directory_iterator()), 2);  // + jsonl
}

}  // namespace
}  // namespace strata
