// Sequence to sequence end to end with the `strata` binary, as run_summarization runs: a tiny
// BART from random init trains on the gloss2word example's first rows, evaluates and predicts
// by generating (ROUGE, gen_len, generated_predictions.txt), and `strata generate` then reads
// the trained model's directory, greedy and with beams. Bad seq2seq options stop before any
// work, naming the option or file.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util_fs.h"

namespace strata {
namespace {

using nlohmann::json;

struct Seq2SeqCli : testing::Test {
  test::ScratchDir dir;
  std::string src = test::source_dir();

  void SetUp() override {
    test::fs::create_directories(dir.path("model"));
    test::write_text(dir.path("model/config.json"),
                     R"({"model_type": "bart", "architectures": ["BartForConditionalGeneration"], "vocab_size": 8000,
 "d_model": 32, "encoder_layers": 1, "decoder_layers": 1, "encoder_attention_heads": 2,
 "decoder_attention_heads": 2, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "max_position_embeddings": 64,
 "scale_embedding": true, "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2, "decoder_start_token_id": 2})");
    std::ofstream t(dir.path("train.jsonl")), v(dir.path("val.jsonl"));
    for (int i = 0; i < 40; ++i) {
      const std::string row = "{\"gloss\": \"a word number " + std::to_string(i) + " in a \\\"quoted\\\" example\", " +
                              "\"words\": \"word " + std::to_string(i % 5) + "\"}\n";
      (i < 32 ? t : v) << row;
    }
  }
  std::string config(const std::string& extra = "") {
    const std::string path = dir.path("job.yaml");
    test::write_text(path, "model_name_or_path: " + dir.path("model") + "\ntokenizer_name: " + src +
                               "/examples/tokenizers/bpe-8k\ntrain_file: " + dir.path("train.jsonl") +
                               "\nvalidation_file: " + dir.path("val.jsonl") + "\ntest_file: " + dir.path("val.jsonl") +
                               "\ntext_column: gloss\nsummary_column: words\nmax_source_length: 24\n"
                               "max_target_length: 8\noutput_dir: " + dir.path("out") +
                               "\ndo_predict: true\npredict_with_generate: true\ngeneration_max_length: 6\n"
                               "per_device_train_batch_size: 8\nmax_steps: 8\nlearning_rate: 3.0e-3\n"
                               "save_strategy: 'no'\nnum_threads: 1\n" + extra);
    return path;
  }
};

TEST_F(Seq2SeqCli, TrainsEvaluatesAndPredictsByGeneratingThenGenerateReadsTheModel) {
  const auto r = test::run_strata({"train", config()}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json eval = json::parse(test::read_text(dir.path("out/eval_results.json")));
  for (const char* k : {"eval_loss", "eval_rouge1", "eval_rouge2", "eval_rougeL", "eval_rougeLsum", "eval_gen_len"})
    EXPECT_TRUE(eval.contains(k)) << k << " in " << eval.dump();
  EXPECT_GE(eval["eval_gen_len"].get<double>(), 2.0);  // the start token and at least one more
  EXPECT_LE(eval["eval_gen_len"].get<double>(), 6.0);  // generation_max_length
  std::istringstream predictions(test::read_text(dir.path("out/generated_predictions.txt")));
  int lines = 0;
  for (std::string line; std::getline(predictions, line);) ++lines;
  EXPECT_EQ(lines, 8);

  const auto g = test::run_strata({"generate", dir.path("out"), "--prompt", "a word number 3", "--max-new-tokens", "4",
                                   "--num-beams", "2", "--num-return-sequences", "2", "--json", "--threads=1"},
                                  dir);
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const json out = json::parse(g.out);
  EXPECT_EQ(out["sequences"].size(), 2u);
  EXPECT_EQ(out["sequences_scores"].size(), 2u);
  EXPECT_LE(out["sequences"][0]["generated_ids"].size(), 4u);
  // greedy with the cache and without it (the recompute decoder) generate the same ids
  std::vector<json> greedy;
  for (const char* cache : {"--use-cache=true", "--use-cache=false"}) {
    const auto c = test::run_strata(
        {"generate", dir.path("out"), "--prompt", "a word number 3", "--max-new-tokens", "4", "--json", cache}, dir);
    ASSERT_EQ(c.exit_code, 0) << c.err;
    greedy.push_back(json::parse(c.out)["sequences"][0]["generated_ids"]);
  }
  EXPECT_EQ(greedy[0], greedy[1]);
}

TEST_F(Seq2SeqCli, BadOptionsAndDataStopBeforeTraining) {
  auto fails = [&](const std::string& set, const std::string& part) {
    const auto r = test::run_strata({"train", config(), "--set", set}, dir);
    EXPECT_NE(r.exit_code, 0) << set;
    EXPECT_NE(r.err.find(part), std::string::npos) << "'" << part << "' not in: " << r.err;
    EXPECT_FALSE(test::fs::exists(dir.path("out/model.safetensors"))) << set;
  };
  fails("max_target_length=0", "max_target_length");
  fails("source_lang=en", "target_lang");
  fails("summary_column=summary", "'summary'");  // the column the file lacks, with the file and line
  test::write_text(dir.path("bad.jsonl"), "{\"gloss\": \"a text\"}\n");
  fails("train_file=" + dir.path("bad.jsonl"), "bad.jsonl: line 1");
}

}  // namespace
}  // namespace strata
