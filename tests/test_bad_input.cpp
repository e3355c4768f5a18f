// Bad input must fail loudly and usefully: a strata::Error (or, from the CLI, a non-zero exit
// and a message on stderr) that names the file and what was expected, and no half-written
// output left behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/jsonl_reader.h"
#include "models/batch_json.h"
#include "io/files.h"
#include "io/safetensors.h"
#include "jobs/job_spec.h"
#include "models/config.h"
#include "models/pretrained.h"
#include "study/study_spec.h"
#include "test_util_fs.h"
#include "tokenizers/tokenizer.h"
#include "train/training_args.h"
#include "util/error.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::ScratchDir;

using test::expect_error;

void expect_load_error(const std::string& dir, const std::vector<std::string>& parts) {
  expect_error([&] { load_pretrained<float>(dir); }, parts);
}

// A fixture model directory copied into the scratch dir, its config.json edited by `edit`.
std::string copy_with_config(const std::string& name, const ScratchDir& scratch,
                             const std::function<void(json&)>& edit) {
  const std::string dir = test::copy_fixture_dir(name, scratch);
  json config = io::read_json_file(dir + "/config.json");
  edit(config);
  test::write_text(dir + "/config.json", config.dump(2));
  return dir;
}

// ---- model directories ---------------------------------------------------------------

TEST(BadInput, TruncatedSafetensorsNamesTheFile) {
  const ScratchDir scratch;
  const std::string dir = test::copy_fixture_dir("bert-seq-cls", scratch);
  const std::string file = dir + "/model.safetensors";
  const auto full = fs::file_size(file);
  // Cut inside the length prefix, inside the JSON header, and inside the last tensor's data.
  const std::pair<uintmax_t, std::string> cuts[] = {
      {4, "shorter than the 8-byte header length prefix"},
      {1000, "runs past the end of the file"},
      {full - 100, "run past the end of the"},
  };
  for (const auto& [size, what] : cuts) {
    SCOPED_TRACE(size);
    fs::copy_file(test::fixture("bert-seq-cls/model.safetensors"), file, fs::copy_options::overwrite_existing);
    fs::resize_file(file, size);
    expect_load_error(dir, {file, what});
  }
}

// Found by fuzz/model_config and fuzz/safetensors_header: the JSON parser reports a number
// past a double's range as out_of_range, not parse_error, and it escaped every reader.
TEST(BadInput, JsonNumberTooLargeForADoubleIsAnError) {
  const ScratchDir scratch;
  const std::string config = scratch.path("config.json");
  test::write_text(config, "{\"model_type\": \"bert\", \"hidden_size\": 1e312}");
  expect_error([&] { load_model_config(scratch.path()); }, {config, "invalid JSON", "number overflow"});

  const std::string header = R"({"w":{"dtype":"F32","shape":[3333333333333333333333E333333333333333333333333333],"data_offsets":[0,4]}})";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  const std::string file = scratch.path("model.safetensors");
  test::write_text(file, bytes + header + std::string(4, '\0'));
  expect_error([&] { io::SafetensorsFile f(file); }, {file, "header is not valid JSON", "number overflow"});

  const std::string jsonl = scratch.path("data.jsonl");
  test::write_text(jsonl, "{\"text\": \"a\", \"label\": 1e400}\n");
  const std::string lines = io::read_file(jsonl);  // the reader keeps a view of it
  expect_error([&] { data::JsonlReader r(lines, jsonl); data::JsonlRecord rec; r.next(rec); },
               {jsonl, "invalid JSON at line 1", "number overflow"});
}

// Found by fuzz/vocab_merges: a vocab.json id near INT32_MAX made the id -> token table that
// large (an allocation of 28 GB). HF accepts sparse ids, so strata keeps them, in a map.
TEST(BadInput, SparseVocabularyIdsCostNoTableOfTheirSize) {
  const ScratchDir scratch;
  test::write_text(scratch.path("vocab.json"), R"({"a": 0, "b": 1, "ab": 888888820})");
  test::write_text(scratch.path("merges.txt"), "#version: 0.2\na b\n");
  const tok::Tokenizer t = tok::Tokenizer::from_dir(scratch.path());
  EXPECT_EQ(t.token_to_id("ab"), 888888820);
  EXPECT_EQ(t.id_to_token(888888820), "ab");
  EXPECT_EQ(t.id_to_token(1), "b");
  EXPECT_EQ(t.id_to_token(888888819), std::nullopt);
}

// Found by fuzz/job_spec: YAML lets a key be a list or a mapping ("? [a, b]: 1"), and
// yaml-cpp's own exception escaped the readers, naming no file. Each reader names the line.
TEST(BadInput, AKeyThatIsAListOrMappingNamesItsLine) {
  expect_error([] { jobs::parse_job_spec("instance_type: local.c2\n? [a, b]\n: 1\n", "job.yaml"); },
               {"job.yaml line 2", "a key must be a plain name, not a list"});
  expect_error([] { jobs::parse_job_spec("environment:\n  ? {a: 1}\n  : x\n", "job.yaml"); },
               {"job.yaml line 2", "not a mapping"});
  expect_error([] { parse_training_arguments("learning_rate: 1.0e-4\n? [lr]\n: 2\n", "train.yaml"); },
               {"train.yaml line 2", "not a list"});
  expect_error([] { parse_training_arguments("distribution:\n  ? [mpi]\n  : {enabled: true}\n", "train.yaml"); },
               {"train.yaml line 2", "not a list"});
  expect_error([] { parse_training_arguments("deepspeed:\n  zero_optimization:\n    ? [stage]\n    : 2\n", "train.yaml"); },
               {"train.yaml line 3", "not a list"});
  expect_error([] { study::parse_study_spec("study: s\njob: job.yaml\noutput_dir: o\nbudget: {samples: 8}\ngrid:\n  ? [instance_count]\n  : [1, 2]\n", "study.yaml"); },
               {"study.yaml line 6", "not a list"});
}

TEST(BadInput, TensorShapeDisagreeingWithConfigNamesTensorAndBothShapes) {
  const ScratchDir scratch;
  const std::string dir = copy_with_config("bert-seq-cls", scratch, [](json& c) { c["intermediate_size"] = 128; });
  // The first parameter that intermediate_size shapes, as stored ([64, 32]) and as implied.
  expect_load_error(dir, {dir, "'bert.encoder.layer.0.intermediate.dense.weight'", "[64, 32]", "[128, 32]"});
}

TEST(BadInput, ConfigMissingARequiredField) {
  const ScratchDir scratch;
  const std::string bert = copy_with_config("bert-seq-cls", scratch, [](json& c) { c.erase("hidden_size"); });
  expect_load_error(bert, {bert + "/config.json", "'hidden_size' is missing"});
  // DistilBERT spells its fields differently; the message must use its spelling.
  const std::string distil = copy_with_config("distilbert-seq-cls", scratch, [](json& c) { c.erase("n_heads"); });
  expect_load_error(distil, {distil + "/config.json", "'n_heads' is missing"});
}

// Heads that do not divide the hidden size (T5 alone gives its heads their own width, d_kv).
TEST(BadInput, HiddenSizeNotDivisibleByTheHeads) {
  const ScratchDir scratch;
  const std::string dir = copy_with_config("bert-seq-cls", scratch, [](json& c) { c["num_attention_heads"] = 3; });
  expect_load_error(dir, {dir + "/config.json", "is not divisible by the number of heads 3"});
}

TEST(BadInput, UnsupportedModelType) {
  const ScratchDir scratch;
  const std::string dir = copy_with_config("bert-seq-cls", scratch, [](json& c) { c["model_type"] = "gpt_neo"; });
  expect_load_error(dir, {dir + "/config.json", "'gpt_neo' is not supported", "bert, roberta, distilbert"});
}

TEST(BadInput, InvalidJsonConfigNamesLineAndColumn) {
  const ScratchDir scratch;
  const std::string dir = test::copy_fixture_dir("bert-seq-cls", scratch);
  test::write_text(dir + "/config.json", "{\n  \"model_type\": \"bert\",\n  \"vocab_size\": 512,,\n}\n");
  expect_load_error(dir, {dir + "/config.json", "invalid JSON at line 3, column"});
}

// JSON integers past int32 must be rejected, not wrapped (2^32 + 2 layers is not 2 layers).
TEST(BadInput, ConfigIntegerBeyondInt32IsRejected) {
  const ScratchDir scratch;
  const std::string dir =
      copy_with_config("bert-seq-cls", scratch, [](json& c) { c["num_hidden_layers"] = 4294967298LL; });
  expect_load_error(dir, {dir + "/config.json", "num_hidden_layers", "4294967298"});
}

// A checkpoint tensor of an integer dtype cannot be a parameter; the error must say which
// model directory holds it, like every other load error.
TEST(BadInput, IntegerTensorInCheckpointNamesTheModel) {
  const ScratchDir scratch;
  const std::string dir = test::copy_fixture_dir("bert-seq-cls", scratch);
  {
    const io::SafetensorsFile original(test::fixture("bert-seq-cls/model.safetensors"));
    std::vector<io::TensorToWrite> tensors;
    const std::vector<int32_t> ints(3, 1);  // classifier.bias is [3]
    for (const io::TensorView& t : original.tensors())
      tensors.push_back(t.name == "classifier.bias" ? io::TensorToWrite{t.name, DType::I32, t.shape, ints.data()}
                                                    : io::TensorToWrite{t.name, t.dtype, t.shape, t.data});
    io::write_safetensors(dir + "/model.safetensors", tensors);
  }
  expect_load_error(dir, {dir, "'classifier.bias'", "I32"});
}

// ---- batches -------------------------------------------------------------------------

class BadInputBatch : public ::testing::Test {
 protected:
  // Writes `batch` to a file and reads it for the model in fixture dir `model`; the read must
  // fail naming that file and containing `parts`.
  void expect_batch_error(const std::string& model, const json& batch, const std::vector<std::string>& parts) {
    const std::string path = scratch_.path("batch.json");
    test::write_text(path, batch.dump());
    const ModelConfig cfg = load_model_config(test::fixture(model));
    std::vector<std::string> all = parts;
    all.push_back(path);
    expect_error([&] { read_batch_json(path, cfg); }, all);
  }
  ScratchDir scratch_;
};

// bert-seq-cls: vocabulary 256, 3 classes. Each test breaks one thing in an otherwise valid batch.
json good_batch() {
  return {{"input_ids", {{5, 6, 7, 8}, {9, 10, 0, 0}}},
          {"attention_mask", {{1, 1, 1, 1}, {1, 1, 0, 0}}},
          {"token_type_ids", {{0, 0, 1, 1}, {0, 1, 0, 0}}},
          {"labels", {2, 0}}};
}

TEST_F(BadInputBatch, TheBaselineBatchIsValid) {
  const std::string path = scratch_.path("batch.json");
  test::write_text(path, good_batch().dump());
  EXPECT_NO_THROW(read_batch_json(path, load_model_config(test::fixture("bert-seq-cls"))));
}

TEST_F(BadInputBatch, TokenIdAtOrAboveVocabularySize) {
  json b = good_batch();
  b["input_ids"][1][1] = 256;
  expect_batch_error("bert-seq-cls", b, {"input_ids[1][1] = 256", "outside the vocabulary [0, 256)"});
}

TEST_F(BadInputBatch, NegativeTokenId) {
  json b = good_batch();
  b["input_ids"][0][2] = -5;
  expect_batch_error("bert-seq-cls", b, {"input_ids[0][2] = -5", "outside the vocabulary"});
}

// JSON integers past int32 must not wrap into valid-looking ids and labels (2^32 + 5 -> 5).
TEST_F(BadInputBatch, IntegersBeyondInt32AreRejected) {
  json b = good_batch();
  b["input_ids"][0][1] = 4294967301LL;
  expect_batch_error("bert-seq-cls", b, {"input_ids", "4294967301"});
  b = good_batch();
  b["labels"] = {4294967298LL, 0};
  expect_batch_error("bert-seq-cls", b, {"labels", "4294967298"});
}

TEST_F(BadInputBatch, RaggedRows) {
  json b = good_batch();
  b["input_ids"][1] = {9, 10, 11};
  expect_batch_error("bert-seq-cls", b, {"'input_ids' is ragged: row 1 has 3 entries, row 0 has 4"});
}

TEST_F(BadInputBatch, AttentionMaskShapeDiffersFromInputIds) {
  json b = good_batch();
  b["attention_mask"] = {{1, 1, 1}, {1, 1, 0}};
  expect_batch_error("bert-seq-cls", b, {"'attention_mask' is [2 x 3] but input_ids is [2 x 4]"});
}

TEST_F(BadInputBatch, ClassLabelOutsideNumLabels) {
  json b = good_batch();
  b["labels"] = {0, 3};
  expect_batch_error("bert-seq-cls", b, {"labels[1] = 3", "[0, 3)"});
  b["labels"] = {-1, 0};  // -100 is HF's "ignore"; other negatives are errors
  expect_batch_error("bert-seq-cls", b, {"labels[0] = -1"});
}

TEST_F(BadInputBatch, MaskedLMLabelOutsideVocabulary) {
  json b = good_batch();
  b["labels"] = {{-100, 300, -100, -100}, {-100, -100, -100, -100}};
  expect_batch_error("bert-masked-lm", b, {"labels[0][1] = 300", "neither -100 nor a token id"});
}

TEST_F(BadInputBatch, TokenTypesOnDistilBert) {
  // DistilBERT has no token-type embeddings: non-zero types would be silently ignored.
  expect_batch_error("distilbert-seq-cls", good_batch(), {"token_type_ids[0][2] = 1", "no token types"});
}

// ---- the CLI ---------------------------------------------------------------------------

std::vector<std::string> step_args(const std::string& model, const std::string& batch, const std::string& out) {
  return {"step", "--model", model, "--batch", batch, "--out", out};
}

TEST(BadInput, StepWithBadBatchExitsNonZeroAndWritesNothing) {
  const ScratchDir scratch;
  json b = good_batch();
  b["input_ids"][0][3] = 9999;
  const std::string batch = scratch.path("batch.json"), out = scratch.path("out.safetensors");
  test::write_text(batch, b.dump());
  const auto r = test::run_strata(step_args(test::fixture("bert-seq-cls"), batch, out), scratch);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(batch + ": input_ids[0][3] = 9999"), std::string::npos) << r.err;
  EXPECT_EQ(scratch.listing(), std::vector<std::string>{"batch.json"});
}

// `strata step` computes a loss, so a batch without labels is an error about that batch file.
TEST(BadInput, StepWithoutLabelsNamesTheBatchFile) {
  const ScratchDir scratch;
  json b = good_batch();
  b.erase("labels");
  const std::string batch = scratch.path("batch.json"), out = scratch.path("out.safetensors");
  test::write_text(batch, b.dump());
  for (const char* model : {"bert-seq-cls", "bert-masked-lm"}) {
    SCOPED_TRACE(model);
    const auto r = test::run_strata(step_args(test::fixture(model), batch, out), scratch);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(batch), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("labels"), std::string::npos) << r.err;
    EXPECT_EQ(scratch.listing(), std::vector<std::string>{"batch.json"});
  }
}

TEST(BadInput, StepWithTruncatedModelExitsNonZeroAndWritesNothing) {
  const ScratchDir scratch;
  const std::string dir = test::copy_fixture_dir("bert-seq-cls", scratch);
  fs::resize_file(dir + "/model.safetensors", 4096);
  const std::string out = scratch.path("out.safetensors");
  const auto r = test::run_strata(step_args(dir, test::fixture("bert-seq-cls.inputs.json"), out), scratch);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(dir + "/model.safetensors: "), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST(BadInput, StepOutIntoMissingDirectoryFailsCleanly) {
  const ScratchDir scratch;
  const std::string out = scratch.path("no_such_dir/out.safetensors");
  const auto r = test::run_strata(
      step_args(test::fixture("bert-seq-cls"), test::fixture("bert-seq-cls.inputs.json"), out), scratch);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(out + ": cannot create"), std::string::npos) << r.err;
  EXPECT_TRUE(scratch.listing().empty());
}

// Here the temporary file is fully written before the final rename fails (the target is a
// directory): the temporary must be removed, and the directory left as it was.
TEST(BadInput, StepOutOntoADirectoryLeavesNoTemporaryFile) {
  const ScratchDir scratch;
  const std::string out = scratch.path("taken");
  fs::create_directory(out);
  const auto r = test::run_strata(
      step_args(test::fixture("bert-seq-cls"), test::fixture("bert-seq-cls.inputs.json"), out), scratch);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(out + ": cannot rename"), std::string::npos) << r.err;
  EXPECT_EQ(scratch.listing(), std::vector<std::string>{"taken"});
}

TEST(BadInput, UnknownOptionPointsToTheHelp) {
  const ScratchDir scratch;
  const auto step = test::run_strata({"step", "--model", test::fixture("bert-seq-cls"), "--bogus", "1"}, scratch);
  EXPECT_NE(step.exit_code, 0);
  for (const char* part : {"unknown option --bogus", "see strata step --help"})
    EXPECT_NE(step.err.find(part), std::string::npos) << part << " not in: " << step.err;

  const auto info = test::run_strata({"info", test::fixture("bert-seq-cls"), "--verbose"}, scratch);
  EXPECT_NE(info.exit_code, 0);
  for (const char* part : {"unknown option --verbose", "see strata info --help"})
    EXPECT_NE(info.err.find(part), std::string::npos) << part << " not in: " << info.err;

  const auto precision = test::run_strata({"step", "--model", test::fixture("bert-seq-cls"), "--batch",
                                           test::fixture("bert-seq-cls.inputs.json"), "--out",
                                           scratch.path("out.safetensors"), "--precision", "fp8"},
                                          scratch);
  EXPECT_NE(precision.exit_code, 0);
  EXPECT_NE(precision.err.find("--precision must be fp32, fp64, bf16 or fp16, got 'fp8'"), std::string::npos) << precision.err;
  EXPECT_TRUE(scratch.listing().empty());
}

TEST(BadInput, InfoOnUnsupportedModelNamesConfigFile) {
  const ScratchDir scratch;
  const std::string dir = copy_with_config("roberta-seq-cls", scratch, [](json& c) { c["model_type"] = "gpt_neo"; });
  const auto r = test::run_strata({"info", dir}, scratch);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(dir + "/config.json: model_type 'gpt_neo' is not supported"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace strata
