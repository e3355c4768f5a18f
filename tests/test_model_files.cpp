// Sharded model weights as HF's save_pretrained(max_shard_size) writes them: shards filled in
// order, an index naming each tensor's shard, stale files of an earlier save removed; and
// max_shard_size's units. SafetensorsSet reads back what is written.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "io/model_files.h"
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
}  // namespace strata::io
