// Sharded model weights as HF's save_pretrained(max_shard_size) writes them: shards filled in
// order, an index naming each tensor's shard, stale files of an earlier save removed; and
// max_shard_size's units. SafetensorsSet reads back what is written. And the JSON text of the files
// HF writes with json.dumps (io/python_json.h).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "io/model_files.h"
#include "io/safetensors.h"
#include "io/python_json.h"
#include "test_util_fs.h"
#include "util/error.h"

namespace strata::io {
namespace {

// Three F32 tensors of 1000, 600 and 3000 values (4000, 2400 and 12000 bytes).
struct ThreeTensors {
  std::vector<float> a = std::vector<float>(1000, 1.f), b = std::vector<float>(600, 2.f), c = std::vector<float>(3000, 3.f);
  std::vector<TensorToWrite> list() const {
    return {{"a", DType::F32, {10, 100}, a.data()}, {"b", DType::F32, {600}, b.data()}, {"c", DType::F32, {3000}, c.data()}};
  }
};

TEST(ModelFiles, OneFileWhenTheWeightsFit) {
  test::ScratchDir dir;
  ThreeTensors t;
  write_model_weights(dir.path(), t.list(), {{"format", "pt"}}, 18400);
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"model.safetensors"});
  EXPECT_EQ(SafetensorsSet(dir.path()).names(), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(ModelFiles, ShardsInOrderWithAnIndexAsHfWritesThem) {
  test::ScratchDir dir;
  ThreeTensors t;
  // a + b fit in 6400 bytes; c alone is larger than the limit and gets a shard of its own.
  write_model_weights(dir.path(), t.list(), {{"format", "pt"}}, 6400);
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                                     "model.safetensors.index.json"}));
  const auto index = nlohmann::json::parse(test::read_text(dir.path("model.safetensors.index.json")));
  EXPECT_EQ(index["metadata"]["total_size"], 18400);
  EXPECT_EQ(index["weight_map"]["a"], "model-00001-of-00002.safetensors");
  EXPECT_EQ(index["weight_map"]["b"], "model-00001-of-00002.safetensors");
  EXPECT_EQ(index["weight_map"]["c"], "model-00002-of-00002.safetensors");
  const SafetensorsSet set(dir.path());
  ASSERT_NE(set.find("c"), nullptr);
  std::vector<float> c(3000);
  convert_to(*set.find("c"), c.data());
  EXPECT_EQ(c, t.c);
}

TEST(ModelFiles, ASaveRemovesTheWeightFilesOfTheLastOneItDoesNotWrite) {
  test::ScratchDir dir;
  ThreeTensors t;
  write_model_weights(dir.path(), t.list(), {}, 2400);  // 3 shards
  EXPECT_EQ(dir.listing().size(), 4u);
  test::write_text(dir.path("config.json"), "{}");
  write_model_weights(dir.path(), t.list(), {}, 6400);  // 2 shards: the 3-shard files go
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"config.json", "model-00001-of-00002.safetensors",
                                                     "model-00002-of-00002.safetensors", "model.safetensors.index.json"}));
  write_model_weights(dir.path(), t.list(), {}, kDefaultMaxShardBytes);  // one file: shards and index go
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"config.json", "model.safetensors"}));
}

TEST(ModelFiles, ShardSizesTakeHfUnits) {
  EXPECT_EQ(parse_shard_size("5GB", "x"), 5'000'000'000ULL);
  EXPECT_EQ(parse_shard_size("500MB", "x"), 500'000'000ULL);
  EXPECT_EQ(parse_shard_size("2GiB", "x"), 2ULL << 30);
  EXPECT_EQ(parse_shard_size("100kB", "x"), 100'000ULL);
  EXPECT_EQ(parse_shard_size("1.5 MiB", "x"), 1572864ULL);
  EXPECT_EQ(parse_shard_size("123456", "x"), 123456ULL);
  for (const char* bad : {"", "GB", "5 parsecs", "-1GB", "0"}) {
    try {
      parse_shard_size(bad, "job.yaml");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("job.yaml: max_shard_size"), std::string::npos) << e.what();
    }
  }
}

}  // namespace

// A sentence-transformers export: modules.json names the folder of its Transformer module.
TEST(ModelFiles, SentenceTransformersLayoutsLeadToTheHfModel) {
  const test::ScratchDir dir;
  const std::string root = dir.path("st"), module = root + "/0_Transformer";
  std::filesystem::create_directories(module);
  EXPECT_EQ(hf_model_dir(root), root);  // no modules.json: the folder itself
  EXPECT_FALSE(has_weight_files(root));
  std::filesystem::copy(test::fixture("bert-seq-cls"), module);
  const std::string modules = R"([{"idx": 0, "name": "0", "path": "0_Transformer",
      "type": "sentence_transformers.models.Transformer"},
     {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])";
  test::write_text(root + "/modules.json", modules);
  EXPECT_EQ(hf_model_dir(root), root + "/0_Transformer");
  EXPECT_TRUE(has_weight_files(root));  // so `strata train` loads them instead of initialising at random
  const SafetensorsSet weights(root);
  EXPECT_NE(weights.find("classifier.weight"), nullptr);

  test::write_text(root + "/modules.json", R"([{"path": "../elsewhere", "type": "sentence_transformers.models.Transformer"}])");
  test::expect_error([&] { hf_model_dir(root); }, {root + "/modules.json", "'../elsewhere'", "leaves the model directory"});
  test::write_text(root + "/modules.json", R"([{"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])");
  test::expect_error([&] { hf_model_dir(root); }, {root + "/modules.json", "no sentence_transformers.models.Transformer"});
}

// Python's repr of a float, which json.dumps writes: nlohmann's Grisu2 gave 0.6934298656894889
// for the first (the same double; HF re-saving trainer_state.json wrote the shorter text).
TEST(PythonJson, FloatsAsPythonReprWritesThem) {
  const std::pair<double, const char*> cases[] = {
      {0.693429865689489, "0.693429865689489"}, {2.0, "2.0"}, {0.0, "0.0"}, {-0.0, "-0.0"}, {-0.5, "-0.5"},
      {1e-05, "1e-05"}, {0.0001, "0.0001"}, {1.5e-07, "1.5e-07"}, {123456.789, "123456.789"},
      {1e15, "1000000000000000.0"}, {1e16, "1e+16"}, {2.5e+17, "2.5e+17"}, {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"}, {0.1 + 0.2, "0.30000000000000004"}};
  for (const auto& [v, text] : cases) EXPECT_EQ(io::python_float(v), text);
  EXPECT_EQ(io::python_float(std::nan("")), "null");
}

TEST(PythonJson, LayoutIsJsonDumpsIndent2SortKeys) {
  const nlohmann::json j = {{"b", {1, 2.5, "x"}}, {"a", nlohmann::json::object()}, {"c", nlohmann::json::array()},
                            {"d", {{"loss", 0.693429865689489}, {"ok", true}, {"none", nullptr}}}};
  EXPECT_EQ(io::python_json(j),
            "{\n  \"a\": {},\n  \"b\": [\n    1,\n    2.5,\n    \"x\"\n  ],\n  \"c\": [],\n  \"d\": {\n"
            "    \"loss\": 0.693429865689489,\n    \"none\": null,\n    \"ok\": true\n  }\n}");
  // Without floats it is nlohmann's own indented dump.
  const nlohmann::json k = {{"x", {1, 2}}, {"name", "caf\u00e9"}};
  EXPECT_EQ(io::python_json(k), k.dump(2));
}

}  // namespace strata::io
