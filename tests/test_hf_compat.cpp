// Drop-in for HF users: configurations written for HF's example scripts load unchanged
// (tests/fixtures/hf_configs), the arguments strata implements are honoured, the ones that do
// not apply are named in one warning, Hub datasets are refused, fp16 / bf16 are checked as HF
// checks them (and refused, saying what to set, where the CPU cannot multiply in them), and
// two of the configurations run on tiny local data. Checkpoints: trainer_state.json is HF's TrainerState
// (HF itself reads it in tests/hf_oracle/), and checkpoints written before strata_state.json
// still resume exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/dataset.h"
#include "test_util_fs.h"
#include "train/training_args.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::expect_command_error;
using test::read_text;
using test::run_strata;
using test::ScratchDir;
using test::write_text;
using Names = std::vector<std::string>;

std::string hf_config(const std::string& name) { return test::fixture("hf_configs/" + name); }
const std::string kTokenizer = test::source_dir() + "/examples/spam/bert-small";

std::string error_of(const std::string& config, const std::vector<std::string>& overrides) {
  try {
    std::vector<ArgumentOverride> parsed;
    for (const std::string& o : overrides) parsed.push_back(parse_set_override(o));
    load_training_arguments(hf_config(config), parsed);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HfConfigs, EveryExampleConfigLoadsWithItsArgumentsHonoured) {
  const TrainingArguments glue = load_training_arguments(hf_config("run_glue_mrpc.json"));
  EXPECT_EQ(glue.task_name, "mrpc");
  EXPECT_EQ(glue.per_device_train_batch_size, 32);
  EXPECT_DOUBLE_EQ(glue.learning_rate, 2e-5);
  EXPECT_EQ(glue.eval_strategy, "epoch");  // evaluation_strategy, v4.36's spelling
  EXPECT_EQ(glue.logging_dir, "/tmp/mrpc/runs");
  EXPECT_EQ(glue.run_name, "bert-base-cased-mrpc");
  EXPECT_EQ(glue.report_to, Names{"none"});
  EXPECT_EQ(glue.max_train_samples, 2000);
  EXPECT_EQ(glue.max_eval_samples, 400);
  EXPECT_EQ(glue.max_predict_samples, 100);
  EXPECT_TRUE(glue.use_cpu);
  // fp16: false, push_to_hub: false and hub_model_id: null are HF's defaults: nothing to say.
  EXPECT_TRUE(glue.ignored_options.empty());

  const TrainingArguments cls = load_training_arguments(hf_config("run_classification.yaml"));
  EXPECT_EQ(cls.text_column, "review_title,review_body,product_category");
  EXPECT_EQ(cls.text_column_delimiter, "\n");
  EXPECT_EQ(cls.label_column, "stars");
  EXPECT_EQ(cls.dataloader_num_workers, 4);
  EXPECT_EQ(cls.ignored_options,
            (Names{"shuffle_train_dataset", "metric_name", "report_to: wandb"}));

  const TrainingArguments mlm = load_training_arguments(hf_config("run_mlm.yaml"));
  EXPECT_TRUE(mlm.line_by_line);
  EXPECT_EQ(mlm.gradient_accumulation_steps, 4);
  EXPECT_EQ(mlm.max_train_samples, 1000);
  EXPECT_EQ(mlm.ignored_options, (Names{"preprocessing_num_workers", "overwrite_cache"}));

  const TrainingArguments clm = load_training_arguments(hf_config("run_clm.json"));
  EXPECT_EQ(clm.block_size, 128);
  EXPECT_EQ(clm.data_seed, 1234);
  EXPECT_EQ(clm.validation_split_percentage, 0) << "run_clm splits train only without a validation file";
  EXPECT_EQ(clm.ignored_options, Names{"torch_dtype"});

  const TrainingArguments ner = load_training_arguments(hf_config("run_ner.json"));
  EXPECT_EQ(ner.text_column, "tokens");
  EXPECT_EQ(ner.label_column, "ner_tags");
  EXPECT_EQ(ner.per_device_train_batch_size, 16);  // per_gpu_train_batch_size, HF's older name
  EXPECT_TRUE(ner.include_num_input_tokens_seen);
  EXPECT_TRUE(ner.ignored_options.empty());

  const TrainingArguments qa = load_training_arguments(hf_config("run_qa.yaml"));
  EXPECT_EQ(qa.max_seq_length, 384);
  EXPECT_EQ(qa.doc_stride, 128);
  EXPECT_EQ(qa.ignored_options,
            (Names{"push_to_hub", "hub_model_id", "gradient_checkpointing_kwargs", "torch_compile", "ddp_backend"}));
}

TEST(HfConfigs, HalfPrecisionFlagsAreCheckedAsHfChecksThem) {
  const std::string glue = "run_glue_mrpc.json";
  EXPECT_EQ(error_of(glue, {"bf16=true", "bf16_full_eval=true", "half_precision_backend=cpu_amp"}), "");
  EXPECT_NE(error_of(glue, {"fp16=true", "bf16=true"}).find("at most one of fp16 and bf16"), std::string::npos);
  EXPECT_NE(error_of(glue, {"fp16_full_eval=true", "bf16_full_eval=true"}).find("bf16_full_eval and fp16_full_eval"),
            std::string::npos);
  EXPECT_NE(error_of(glue, {"half_precision_backend=apex"}).find("apex is NVIDIA's CUDA extension"), std::string::npos);
  EXPECT_NE(error_of(glue, {"fp16_backend=cuda_amp"}).find("expected one of auto, cpu_amp, emulated"),
            std::string::npos);  // HF's older name of half_precision_backend
  EXPECT_NE(error_of(glue, {"fp16_init_scale=1000"}).find("must be a power of two"), std::string::npos);
  EXPECT_NE(error_of(glue, {"fp16_growth_interval=0"}).find("must be positive"), std::string::npos);
  const TrainingArguments a = load_training_arguments(
      hf_config(glue), {parse_set_override("fp16=true"), parse_set_override("fp16_backend=emulated")});
  EXPECT_TRUE(a.fp16);
  EXPECT_EQ(a.half_precision_backend, "emulated");
  EXPECT_EQ(a.fp16_init_scale, 65536);  // GradScaler's defaults
  EXPECT_EQ(a.fp16_growth_interval, 2000);
}

TEST(HfConfigs, HubDatasetsAndMissingFeaturesAreRefused) {
  const std::string hub = error_of("run_glue_mrpc.json", {"dataset_name=glue"});
  EXPECT_NE(hub.find("not Hub datasets"), std::string::npos) << hub;
  EXPECT_NE(hub.find("train_file"), std::string::npos) << hub;
  EXPECT_NE(error_of("run_qa.yaml", {"label_smoothing_factor=0.1"}).find("label smoothing"), std::string::npos);
  EXPECT_NE(error_of("run_qa.yaml", {"adafactor=true"}).find("optim: adamw_torch"), std::string::npos);
  // At HF's default value they are what the config writes when it does not mean them.
  EXPECT_EQ(error_of("run_qa.yaml", {"label_smoothing_factor=0.0", "bf16=false", "dataset_name=null"}), "");
  EXPECT_NE(error_of("run_qa.yaml", {"max_train_samples=0"}).find("max_train_samples must be positive"),
            std::string::npos);
}

TEST(HfConfigs, TheExampleScriptsSpellingsResolve) {
  const std::string base = "output_dir: o\ndo_train: false\n";
  // run_mlm / run_clm from scratch name the config, not a model.
  EXPECT_EQ(parse_training_arguments(base + "config_name: cfg\n", "job.yaml").model_name_or_path, "cfg");
  EXPECT_NE(error_of("run_qa.yaml", {"config_name=other"}).find("config_name (other) differs"), std::string::npos);
  // Trainer.train(resume_from_checkpoint=True) resumes from the last checkpoint.
  EXPECT_EQ(parse_training_arguments(base + "model_name_or_path: m\nresume_from_checkpoint: true\n", "job.yaml")
                .resume_from_checkpoint,
            "latest");
  EXPECT_EQ(parse_training_arguments(base + "model_name_or_path: m\ndo_regression: true\n", "job.yaml").problem_type,
            "regression");
  // HF's None for a number is its default.
  EXPECT_EQ(parse_training_arguments(base + "model_name_or_path: m\nmax_eval_samples: null\n", "job.yaml")
                .max_eval_samples,
            -1);
}

// run_classification's text_column_names: the columns' texts joined into one, in memory and
// streaming, CSV and JSON Lines alike.
TEST(HfConfigs, TextColumnNamesJoinTheColumnsWithTheDelimiter) {
  ScratchDir dir;
  write_text(dir.path("r.csv"), "title,body,stars\nGreat,\"Works well, really\",5\nBad,Broke,1\n");
  write_text(dir.path("r.jsonl"), "{\"title\":\"Great\",\"body\":\"Works well, really\",\"stars\":5}\n"
                                  "{\"title\":\"Bad\",\"body\":\"Broke\",\"stars\":1}\n");
  for (const char* file : {"r.csv", "r.jsonl"})
    for (bool streaming : {false, true}) {
      data::DataOptions o;
      o.train_file = dir.path(file);
      o.columns.text = "title";
      o.columns.more_text = {"body"};
      o.columns.text_delimiter = "\n";
      o.columns.label = "stars";
      o.streaming = streaming;
      const data::Datasets d = data::load_datasets(o);
      std::string text, pair;
      d.train->texts(0, text, pair);
      EXPECT_EQ(text, "Great\nWorks well, really") << file << " streaming " << streaming;
      d.train->texts(1, text, pair);
      EXPECT_EQ(text, "Bad\nBroke") << file << " streaming " << streaming;
    }
  data::DataOptions missing;
  missing.train_file = dir.path("r.csv");
  missing.columns.text = "title";
  missing.columns.more_text = {"bdy"};
  missing.columns.label = "stars";
  test::expect_error([&] { data::load_datasets(missing); }, {"r.csv", "bdy", "did you mean 'body'"});
}

// A tiny BERT and GLUE-MRPC-style data (sentence1, sentence2, label) for running the configs.
class HfConfigRun : public testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.path("model"));
    write_text(dir_.path("model/config.json"),
               json{{"model_type", "bert"}, {"vocab_size", 8000}, {"hidden_size", 32}, {"num_hidden_layers", 1},
                    {"num_attention_heads", 2}, {"intermediate_size", 64}, {"max_position_embeddings", 64},
                    {"pad_token_id", 0}}
                   .dump());
    std::string rows = "sentence1,sentence2,label\n";
    for (int i = 0; i < 24; ++i)
      rows += "the cat sat " + std::to_string(i) + "," + (i % 2 ? "the cat sat" : "a dog ran far") + "," +
              std::to_string(i % 2) + "\n";
    write_text(dir_.path("train.csv"), rows);
    write_text(dir_.path("dev.csv"), "sentence1,sentence2,label\nthe cat,the cat,1\na dog,the mat,0\nfar,far,1\n");
  }
  // The fixture config with model, data and outputs pointed here, as a user edits the paths.
  std::vector<std::string> run_glue(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"train", hf_config("run_glue_mrpc.json"),
                                     "--set", "model_name_or_path=" + dir_.path("model"),
                                     "--set", "tokenizer_name=" + kTokenizer,
                                     "--set", "train_file=" + dir_.path("train.csv"),
                                     "--set", "validation_file=" + dir_.path("dev.csv"),
                                     "--set", "test_file=" + dir_.path("dev.csv"),
                                     "--set", "output_dir=" + dir_.path("out"),
                                     "--set", "logging_dir=" + dir_.path("runs"),
                                     "--set", "num_threads=1"};
    for (const std::string& e : extra) args.insert(args.end(), {"--set", e});
    return args;
  }
  std::vector<json> log_entries(const std::string& path) {
    std::vector<json> out;
    const std::string text = read_text(path);
    for (size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1)
      out.push_back(json::parse(text.substr(at, nl - at)));
    return out;
  }
  ScratchDir dir_;
};

TEST_F(HfConfigRun, RunGlueConfigRunsOnLocalFilesWithHfOutputs) {
  const auto r = run_strata(run_glue({"max_train_samples=16"}), dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // Every option of the config applies (use_cpu too): no warning.
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("Run = bert-base-cased-mrpc"), std::string::npos);
  const fs::path out = dir_.path("out");
  // 16 examples, batch 32: one step per epoch, 3 epochs, each evaluated and saved.
  const json train = json::parse(read_text(out / "train_results.json"));
  EXPECT_EQ(train["train_samples"], 16);
  EXPECT_EQ(train["global_step"], 3);
  EXPECT_GT(train["total_flos"].get<double>(), 0);
  // MRPC's columns sentence1 / sentence2 were read as the pair; its predictions file is run_glue's.
  const std::string preds = read_text(out / "predict_results_mrpc.txt");
  EXPECT_EQ(preds.substr(0, preds.find('\n')), "index\tprediction");
  EXPECT_EQ(std::count(preds.begin(), preds.end(), '\n'), 4) << preds;
  EXPECT_EQ(json::parse(read_text(out / "predict_results.json"))["predict_samples"], 3);
  EXPECT_TRUE(json::parse(read_text(out / "all_results.json")).contains("predict_accuracy"));
  // logging_dir holds the log; output_dir the model, its card, and HF's final trainer state.
  EXPECT_FALSE(fs::exists(out / "trainer_log.jsonl"));
  const auto log = log_entries(dir_.path("runs/trainer_log.jsonl"));
  EXPECT_EQ(std::count_if(log.begin(), log.end(), [](const json& e) { return e.contains("eval_loss"); }), 4)
      << "3 evaluations per epoch and the final one";
  const std::string card = read_text(out / "README.md");
  EXPECT_EQ(card.rfind("---\n", 0), 0u);
  EXPECT_NE(card.find("on the GLUE MRPC dataset."), std::string::npos) << card;
  EXPECT_NE(card.find("| Training Loss | Epoch | Step |"), std::string::npos) << card;
  const json state = json::parse(read_text(out / "trainer_state.json"));
  EXPECT_EQ(state["num_train_epochs"], 3);
  EXPECT_EQ(state["global_step"], 3);
  EXPECT_FALSE(state.contains("data_position"));
  EXPECT_EQ(json::parse(read_text(out / "checkpoint-3/strata_state.json"))["data_position"]["epoch"], 3);
}

// bf16 where the CPU has no bf16 products (here: the kernels capped at AVX2, as on AMD Zen 3):
// refused before any work, saying what the CPU lacks and what to set instead.
TEST_F(HfConfigRun, Bf16WithoutNativeProductsIsRefusedAndWritesNothing) {
  ::setenv("STRATA_MAX_CPU_ISA", "avx2", 1);
  const test::CommandResult r = run_strata(run_glue({"bf16=true"}), dir_);
  ::unsetenv("STRATA_MAX_CPU_ISA");
  expect_command_error(r, {"bf16: bf16 products need a CPU with avx512_bf16 or AMX", "caps the kernels at avx2",
                           "half_precision_backend: emulated"});
  EXPECT_FALSE(fs::exists(dir_.path("out")));
}

// fp16 with HF's flags: the run says how it multiplies, logs GradScaler's scale and the skipped
// steps with each loss (in trainer_state.json's log_history, which HF reads), and checkpoints
// keep the scaler's state.
TEST_F(HfConfigRun, Fp16TrainsWithLossScaling) {
  const auto r =
      run_strata(run_glue({"fp16=true", "half_precision_backend=emulated", "max_train_samples=16", "logging_steps=1"}),
                 dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("mixed precision: fp16 training: products take fp16 inputs and accumulate in fp32 (emulated"),
            std::string::npos)
      << r.out;
  const json state = json::parse(read_text(dir_.path("out/trainer_state.json")));
  int losses = 0;
  for (const json& e : state["log_history"])
    if (e.contains("loss")) {
      ++losses;
      EXPECT_EQ(e["loss_scale"], 65536.0) << e;
      EXPECT_EQ(e["skipped_steps"], 0) << e;
    }
  EXPECT_EQ(losses, 3);
  const json scaler = json::parse(read_text(dir_.path("out/checkpoint-3/strata_state.json")))["loss_scaler"];
  EXPECT_EQ(scaler["scale"], 65536.0);
  EXPECT_EQ(scaler["_growth_tracker"], 3);
}

TEST_F(HfConfigRun, RunNerConfigRunsOnLocalFiles) {
  write_text(dir_.path("model/config.json"),
             json{{"model_type", "bert"}, {"architectures", {"BertForTokenClassification"}}, {"vocab_size", 8000},
                  {"hidden_size", 32}, {"num_hidden_layers", 1}, {"num_attention_heads", 2},
                  {"intermediate_size", 64}, {"max_position_embeddings", 64}, {"pad_token_id", 0}}
                 .dump());
  std::string rows;
  for (int i = 0; i < 12; ++i)  // conll2003 as datasets' to_json writes it: tokens and ner_tags
    rows += json{{"id", std::to_string(i)},
                 {"tokens", {"the", "cat", std::to_string(i), "red"}},
                 {"ner_tags", {"O", "O", "B-NUM", i % 2 ? "B-COL" : "O"}}}
                .dump() + "\n";
  write_text(dir_.path("ner.json"), rows);
  const auto r = run_strata(
      {"train", hf_config("run_ner.json"), "--set", "model_name_or_path=" + dir_.path("model"), "--set",
       "tokenizer_name=" + kTokenizer, "--set", "train_file=" + dir_.path("ner.json"), "--set",
       "validation_file=" + dir_.path("ner.json"), "--set", "test_file=" + dir_.path("ner.json"), "--set",
       "output_dir=" + dir_.path("out"), "--set", "max_steps=4", "--set", "max_predict_samples=5", "--set",
       "num_threads=1"},
      dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "") << "nothing to warn about";
  const std::string preds = read_text(dir_.path("out/predictions.txt"));
  EXPECT_EQ(std::count(preds.begin(), preds.end(), '\n'), 5) << preds;
  const json predict = json::parse(read_text(dir_.path("out/predict_results.json")));
  EXPECT_EQ(predict["predict_samples"], 5);
  EXPECT_TRUE(predict.contains("predict_NUM_f1")) << predict.dump();  // return_entity_level_metrics
  // include_num_input_tokens_seen: every log entry counts the input tokens so far.
  const auto log = log_entries(dir_.path("out/trainer_log.jsonl"));
  ASSERT_FALSE(log.empty());
  EXPECT_GT(log.back()["num_input_tokens_seen"].get<int64_t>(), 0);
  EXPECT_EQ(log.back()["num_input_tokens_seen"],
            json::parse(read_text(dir_.path("out/trainer_state.json")))["num_input_tokens_seen"]);
}

// A checkpoint written before strata_state.json (its fields were in trainer_state.json) resumes
// to the same weights as the uninterrupted run; one with neither is refused, saying why.
TEST_F(HfConfigRun, CheckpointsOfEarlierStrataResumeExactly) {
  const std::vector<std::string> short_run = {"num_train_epochs=2", "save_total_limit=0", "do_predict=false",
                                              "load_best_model_at_end=false"};
  ASSERT_EQ(run_strata(run_glue(short_run), dir_).exit_code, 0);
  const fs::path old = dir_.path("old");
  fs::create_directories(old);
  fs::copy(dir_.path("out/checkpoint-1"), old / "checkpoint-1", fs::copy_options::recursive);
  json state = json::parse(read_text(old / "checkpoint-1/trainer_state.json"));
  state.update(json::parse(read_text(old / "checkpoint-1/strata_state.json")));
  state.erase("data_seed");  // not written before strata_state.json
  write_text(old / "checkpoint-1/trainer_state.json", state.dump());
  fs::remove(old / "checkpoint-1/strata_state.json");
  auto resumed = run_glue(short_run);
  resumed.insert(resumed.end(), {"--set", "output_dir=" + old.string(), "--set", "resume_from_checkpoint=latest"});
  const auto r = run_strata(resumed, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(read_text(old / "model.safetensors"), read_text(dir_.path("out/model.safetensors")));

  state.erase("data_position");  // an HF Trainer's checkpoint has no position in strata's data order
  write_text(old / "checkpoint-1/trainer_state.json", state.dump());
  fs::remove_all(old / "checkpoint-2");
  expect_command_error(run_strata(resumed, dir_), {"checkpoint-1", "no strata_state.json", "model_name_or_path"});
}

TEST_F(HfConfigRun, EvalDelayDataSeedAndIgnoreDataSkipActAsInHf) {
  const std::vector<std::string> steps = {"evaluation_strategy=steps", "save_strategy=steps", "eval_steps=1",
                                          "save_steps=1", "logging_steps=1", "per_device_train_batch_size=8",
                                          "max_steps=4", "load_best_model_at_end=false", "do_predict=false",
                                          "save_total_limit=0"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), steps.begin(), steps.end());
    return run_glue(extra);
  };
  auto losses = [&](const std::string& log) {
    std::vector<double> out;
    for (const json& e : log_entries(log))
      if (e.contains("loss")) out.push_back(e["loss"].get<double>());
    return out;
  };
  // eval_delay 3: the evaluations of steps 1 and 2 are skipped.
  ASSERT_EQ(run_strata(with({"eval_delay=3"}), dir_).exit_code, 0);
  std::vector<int64_t> evaluated;
  for (const json& e : log_entries(dir_.path("runs/trainer_log.jsonl")))
    if (e.contains("eval_loss")) evaluated.push_back(e["step"].get<int64_t>());
  EXPECT_EQ(evaluated, (std::vector<int64_t>{3, 4, 4})) << "steps 3 and 4, then the final evaluation";
  const auto base = losses(dir_.path("runs/trainer_log.jsonl"));

  // data_seed sets the data order only: equal to seed, the run is the same; else it differs.
  ASSERT_EQ(run_strata(with({"data_seed=42", "output_dir=" + dir_.path("same"), "logging_dir="}), dir_).exit_code, 0);
  EXPECT_EQ(losses(dir_.path("same/trainer_log.jsonl")), base);
  ASSERT_EQ(run_strata(with({"data_seed=7", "output_dir=" + dir_.path("other"), "logging_dir="}), dir_).exit_code, 0);
  EXPECT_NE(losses(dir_.path("other/trainer_log.jsonl")), base);

  // ignore_data_skip: resuming from step 2 (batch 2 of 3 in epoch 0) starts epoch 0 again.
  fs::remove_all(dir_.path("out/checkpoint-3"));
  fs::remove_all(dir_.path("out/checkpoint-4"));
  ASSERT_EQ(run_strata(with({"resume_from_checkpoint=latest", "ignore_data_skip=true"}), dir_).exit_code, 0);
  const auto log = log_entries(dir_.path("runs/trainer_log.jsonl"));
  const auto step3 = std::find_if(log.begin(), log.end(), [](const json& e) { return e["step"] == 3; });
  ASSERT_NE(step3, log.end());
  EXPECT_NEAR((*step3)["epoch"].get<double>(), 1.0 / 3, 1e-4) << "the first batch of epoch 0 again, not batch 3";
}

}  // namespace
}  // namespace strata
