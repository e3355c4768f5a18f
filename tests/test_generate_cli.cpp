// `strata generate` end to end on the tiny HF GPT-2 fixture, with a 512-token BPE tokenizer
// (tests/fixtures/tokenizers/synthetic/bpe-byte-fallback.json, the model's vocabulary size):
// greedy output is deterministic and the same with and without the KV cache, sampling is
// reproducible per seed, and bad input exits non-zero with a message naming what is wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util_fs.h"

namespace strata {
namespace {

using nlohmann::json;
using test::run_strata;

// The fixture model with a tokenizer beside it, in a scratch directory.
struct GenerateCli : testing::Test {
  test::ScratchDir dir;
  std::string model = test::copy_fixture_dir("gpt2-causal-lm", dir);
  void SetUp() override {
    test::fs::copy_file(test::fixture("tokenizers/synthetic/bpe-byte-fallback.json"), model + "/tokenizer.json");
  }
  test::CommandResult run(std::vector<std::string> args) {
    args.insert(args.begin(), {"generate", model});
    args.push_back("--threads=1");
    return run_strata(args, dir);
  }
  // The JSON lines of a --json run.
  static std::vector<json> lines(const test::CommandResult& r) {
    std::vector<json> out;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    return out;
  }
  void expect_failure(const std::vector<std::string>& args, const std::vector<std::string>& parts) {
    const test::CommandResult r = run(args);
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_TRUE(r.out.empty()) << r.out;
    for (const auto& p : parts) EXPECT_NE(r.err.find(p), std::string::npos) << "'" << p << "' not in: " << r.err;
  }
};

TEST_F(GenerateCli, GreedyIsDeterministicWithAndWithoutTheCache) {
  const auto a = run({"--prompt", "Hello world, the cat", "--max-new-tokens", "12", "--json"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const auto got = lines(a);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["prompt"], "Hello world, the cat");
  EXPECT_EQ(got[0]["prompt_ids"].front(), 1);  // the tokenizer's <s>
  const json& seq = got[0]["sequences"].at(0);
  EXPECT_EQ(seq["generated_ids"].size(), 12u);
  EXPECT_EQ(seq["finish_reason"], "length");
  EXPECT_NE(a.err.find("12 new tokens for 1 prompt(s)"), std::string::npos) << a.err;
  EXPECT_NE(a.err.find("kv cache"), std::string::npos) << a.err;
  const auto b = run({"--prompt", "Hello world, the cat", "--max-new-tokens", "12", "--json", "--use-cache=false"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(b.out, a.out);
  EXPECT_NE(b.err.find("recompute"), std::string::npos) << b.err;
  // Text output: the prompt, then its continuation.
  const auto t = run({"--prompt", "Hello world, the cat", "--max-new-tokens", "12"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(t.out, "Hello world, the cat" + seq["completion"].get<std::string>() + "\n");
}

TEST_F(GenerateCli, SamplingIsReproduciblePerSeed) {
  auto sample = [&](const std::string& seed) {
    const auto r = run({"--prompt", "the cat", "--do-sample", "--temperature", "1.3", "--top-k", "40", "--top-p",
                        "0.95", "--num-return-sequences", "3", "--max-new-tokens", "10", "--seed", seed, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  const std::string a = sample("5");
  EXPECT_EQ(sample("5"), a);
  EXPECT_NE(sample("6"), a);
  const auto got = lines({0, a, ""});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["sequences"].size(), 3u);
}

TEST_F(GenerateCli, PromptFileGivesOneResultPerLine) {
  test::write_text(dir.path("prompts.txt"), "the cat\n\nHello world\r\n");
  const auto r = run({"--prompt-file", dir.path("prompts.txt"), "--max-new-tokens", "3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto got = lines(r);
  ASSERT_EQ(got.size(), 2u);  // the blank line is skipped
  EXPECT_EQ(got[0]["prompt"], "the cat");
  EXPECT_EQ(got[1]["prompt"], "Hello world");
  const auto t = run({"--prompt-file", dir.path("prompts.txt"), "--max-new-tokens", "3"});
  EXPECT_NE(t.out.find("=== prompt 2, sequence 1 ===\nHello world"), std::string::npos) << t.out;
}

TEST_F(GenerateCli, GenerationConfigJsonGivesDefaultsAndFlagsOverride) {
  test::write_text(model + "/generation_config.json",
                   R"({"max_new_tokens": 4, "eos_token_id": 511, "typical_p": 0.5})");
  auto r = run({"--prompt", "the cat", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines(r)[0]["sequences"][0]["generated_ids"].size(), 4u);
  EXPECT_NE(r.err.find("typical_p = 0.5 is not implemented"), std::string::npos) << r.err;
  r = run({"--prompt", "the cat", "--json", "--max-new-tokens", "6"});
  EXPECT_EQ(lines(r)[0]["sequences"][0]["generated_ids"].size(), 6u);
}

// Beam search end to end: num_return_sequences hypotheses per prompt, best first, with HF's
// sequences_scores; the same tokens without the cache; HF's underscore spellings accepted.
TEST_F(GenerateCli, BeamSearchReturnsTheBestHypothesesWithScores) {
  const std::vector<std::string> args = {"--prompt", "Hello world, the cat", "--num_beams", "4",
                                         "--num_return_sequences", "3", "--length_penalty", "0.6",
                                         "--early_stopping", "never", "--no_repeat_ngram_size", "2",
                                         "--max-new-tokens", "8", "--json"};
  const auto a = run(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.err.find("4 beams"), std::string::npos) << a.err;
  const auto got = lines(a);
  ASSERT_EQ(got.size(), 1u);
  const json& seqs = got[0]["sequences"];
  const json& scores = got[0]["sequences_scores"];
  ASSERT_EQ(seqs.size(), 3u);
  ASSERT_EQ(scores.size(), 3u);
  for (size_t j = 0; j < 3; ++j) {
    EXPECT_GE(seqs[j]["generated_ids"].size(), 1u);
    EXPECT_LE(seqs[j]["generated_ids"].size(), 8u);
    EXPECT_LT(scores[j].get<double>(), 0.0);
    if (j > 0) {
      EXPECT_GE(scores[j - 1].get<double>(), scores[j].get<double>());  // best first
    }
  }
  EXPECT_NE(seqs[0]["generated_ids"], seqs[1]["generated_ids"]);
  std::vector<std::string> recompute = args;
  recompute.push_back("--use-cache=false");
  const auto b = run(recompute);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const json other = lines(b)[0];
  for (size_t j = 0; j < 3; ++j) {
    EXPECT_EQ(other["sequences"][j]["generated_ids"], seqs[j]["generated_ids"]);
    EXPECT_NEAR(other["sequences_scores"][j].get<double>(), scores[j].get<double>(), 1e-5);
  }
  // Text output: one block per returned sequence; no scores outside --json.
  const auto t = run({"--prompt", "Hello world, the cat", "--num-beams", "2", "--num-return-sequences", "2",
                      "--max-new-tokens", "4"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("=== prompt 1, sequence 2 ===\nHello world, the cat"), std::string::npos) << t.out;
  // Greedy and sampling output carries no sequences_scores.
  EXPECT_FALSE(lines(run({"--prompt", "a", "--max-new-tokens", "2", "--json"}))[0].contains("sequences_scores"));
}

TEST_F(GenerateCli, BeamSearchSettingsComeFromGenerationConfigJson) {
  test::write_text(model + "/generation_config.json",
                   R"({"max_new_tokens": 5, "num_beams": 3, "num_return_sequences": 2, "early_stopping": true})");
  const auto r = run({"--prompt", "the cat", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines(r)[0]["sequences_scores"].size(), 2u);
  EXPECT_EQ(r.err.find("not implemented"), std::string::npos) << r.err;
  // Beam-only flags with one beam: generated greedily, with HF's warning.
  test::write_text(model + "/generation_config.json", R"({"max_new_tokens": 2})");
  const auto w = run({"--prompt", "the cat", "--length-penalty", "2"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_NE(w.err.find("--length-penalty and --early-stopping only apply with --num-beams > 1"), std::string::npos)
      << w.err;
}

// forced_eos_token_id from generation_config.json ends every sequence with eos at the last
// position at the latest; --min-new-tokens holds eos back until then, so the sequence is full.
TEST_F(GenerateCli, LengthRulesComeFromGenerationConfigJsonAndFlags) {
  test::write_text(model + "/generation_config.json", R"({"eos_token_id": 137, "forced_eos_token_id": 137})");
  for (const char* beams : {"1", "3"}) {
    auto r = run({"--prompt", "Hello world, the cat", "--max-new-tokens", "5", "--num-beams", beams, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<int32_t> ids = lines(r)[0]["sequences"][0]["generated_ids"];
    EXPECT_LE(ids.size(), 5u) << beams;
    EXPECT_EQ(ids.back(), 137) << beams;
    r = run({"--prompt", "Hello world, the cat", "--max-new-tokens", "5", "--num-beams", beams, "--min-new-tokens", "5",
             "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ids = lines(r)[0]["sequences"][0]["generated_ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(ids.size(), 5u) << beams;
    EXPECT_EQ(std::count(ids.begin(), ids.end(), 137), 1) << beams;  // the forced one, last
    EXPECT_EQ(ids.back(), 137) << beams;
    EXPECT_EQ(lines(r)[0]["sequences"][0]["finish_reason"], "eos_token");
  }
  // A minimum above the maximum draws HF's warning and generates up to the maximum.
  const auto r = run({"--prompt", "Hello world, the cat", "--max-new-tokens", "3", "--min-length", "40", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("unfeasible length constraints: the minimum length (40) is larger than the maximum possible "
                       "length"),
            std::string::npos)
      << r.err;
  expect_failure({"--prompt", "a", "--min-new-tokens", "-1"}, {"min_new_tokens must be a non-negative integer"});
  test::write_text(model + "/generation_config.json", R"({"forced_bos_token_id": 600})");
  expect_failure({"--prompt", "a"},
                 {"forced_bos_token_id 600 is not a token of the model's vocabulary (vocab_size 512)"});
}

TEST_F(GenerateCli, BadBeamSettingsExitNonZeroNamingTheProblem) {
  expect_failure({"--prompt", "a", "--num_beams", "0"},
                 {"num_beams must be a positive integer (1: no beam search), got 0"});
  expect_failure({"--prompt", "a", "--num_beams", "2", "--num_return_sequences", "3"},
                 {"num_return_sequences (3) has to be smaller or equal to num_beams (2)"});
  expect_failure({"--prompt", "a", "--num-beams", "2", "--do-sample"}, {"beam sampling", "is not implemented"});
  expect_failure({"--prompt", "a", "--num-beams", "2", "--early-stopping", "sometimes"},
                 {"--early-stopping: early_stopping must be true, false or never, got 'sometimes'"});
  expect_failure({"--prompt", "a", "--no-repeat-ngram-size", "-1"}, {"no_repeat_ngram_size must be 0 (off)"});
  expect_failure({"--prompt", "a", "--repetition-penalty", "0"}, {"repetition_penalty must be a strictly positive"});
  test::write_text(model + "/generation_config.json", R"({"num_beams": 2, "early_stopping": "always"})");
  expect_failure({"--prompt", "a"},
                 {"generation_config.json: field 'early_stopping' must be true, false or \"never\""});
}

TEST_F(GenerateCli, BadInputExitsNonZeroNamingTheProblem) {
  expect_failure({"--max-new-tokens", "3"}, {"--prompt TEXT or --prompt-file FILE"});
  expect_failure({"--prompt", "a", "--do-sample", "--top-p", "0"}, {"top_p must be in (0, 1], got 0"});
  expect_failure({"--prompt", "a", "--do-sample", "--top-p", "1.5"}, {"top_p must be in (0, 1]"});
  expect_failure({"--prompt", "a", "--do-sample", "--temperature", "0"}, {"temperature must be a strictly positive"});
  expect_failure({"--prompt", "a", "--top-k", "-2"}, {"top_k must be 0 (off) or a positive integer"});
  expect_failure({"--prompt", "a", "--num-return-sequences", "2"}, {"num_return_sequences must be 1"});
  expect_failure({"--prompt", "a", "--max-new-tokens", "0"}, {"max_new_tokens must be a positive integer"});
  expect_failure({"--prompt", "a", "--max-new-tokens", "200"},
                 {"prompt 1 has 2 tokens; with 200 new tokens that is 202 positions, more than the model's 128",
                  "--max-new-tokens 126"});
  expect_failure({"--prompt", "a", "--do-sample=maybe"}, {"--do-sample = maybe"});
  expect_failure({"--prompt", "a", "--beams", "4"}, {"unknown option --beams"});
  expect_failure({"--prompt-file", dir.path("missing.txt")}, {"missing.txt: cannot open the prompt file"});
  expect_failure({"--prompt", "a", "--tokenizer", dir.path("nowhere")}, {"nowhere"});
}

TEST_F(GenerateCli, NonCausalModelsAreRefusedNamingTheDirAndWhatCanGenerate) {
  for (const char* name : {"gpt2-seq-cls", "bert-masked-lm"}) {
    const test::CommandResult r = run_strata({"generate", test::fixture(name), "--prompt", "a"}, dir);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find(test::fixture(name) + ": a "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("is not a causal language model"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("GPT2LMHeadModel"), std::string::npos) << r.err;
  }
}


// On the emulated GPU (kernels/emulated_gpu.h; CTest sets STRATA_EMULATED_GPU=1): greedy, beam
// search and sampling, with the key/value cache and without, give the CPU's ids and scores.
struct GenerateOnEmulatedGpu : GenerateCli {
  void SetUp() override {
    if (!std::getenv("STRATA_EMULATED_GPU")) GTEST_SKIP() << "STRATA_EMULATED_GPU=1 not set";
    GenerateCli::SetUp();
  }
};

TEST_F(GenerateOnEmulatedGpu, TheSameSequencesAsOnTheCpu) {
  const std::vector<std::vector<std::string>> cases = {
      {"--max-new-tokens", "10"},
      {"--max-new-tokens", "10", "--use-cache=false"},
      {"--max-new-tokens", "10", "--num-beams", "3", "--num-return-sequences", "2"},
      {"--max-new-tokens", "10", "--do-sample", "--seed", "5", "--top-k", "20"},
  };
  for (std::vector<std::string> args : cases) {
    args.insert(args.end(), {"--prompt", "Hello world, the cat", "--json"});
    std::vector<std::string> gpu = args;
    gpu.push_back("--device=cuda");
    const auto c = run(args), g = run(gpu);
    ASSERT_EQ(c.exit_code, 0) << c.err;
    ASSERT_EQ(g.exit_code, 0) << g.err;
    EXPECT_EQ(g.out, c.out) << args[2];
  }
}

}  // namespace
}  // namespace strata
