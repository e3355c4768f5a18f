#include "io/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numbers>
#include <string>

#include <nlohmann/json.hpp>

#include "io/files.h"
#include "util/error.h"

namespace strata::io {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A fresh directory per test, removed afterwards, so tests never see each other's files.
class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           (std::string("strata_st_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::vector<std::string> dir_entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path dir_;
};

void write_bytes(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// A hand-made safetensors file: the length prefix, `header` verbatim, then `data_size` zero bytes.
void write_raw(const std::string& path, const std::string& header, size_t data_size) {
  write_bytes(path, le64(header.size()) + header + std::string(data_size, '\0'));
}

// Runs f, which must throw strata::Error, and returns its message.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected strata::Error";
  return "";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

template <typename T>
bool same_bytes(const TensorView* t, const std::vector<T>& v) {
  return t && t->nbytes == v.size() * sizeof(T) && std::memcmp(t->data, v.data(), t->nbytes) == 0;
}

TEST_F(SafetensorsTest, RoundTripIsBitExact) {
  const std::vector<float> f32 = {1.5f, -0.0f, std::numeric_limits<float>::denorm_min(),
                                  std::numeric_limits<float>::infinity(), 3e38f, -7.25f};
  const std::vector<double> f64 = {std::numbers::pi, -1e-310, std::numeric_limits<double>::quiet_NaN(), 0.1};
  const std::vector<int64_t> i64 = {std::numeric_limits<int64_t>::min(), -1, 0, 42, std::numeric_limits<int64_t>::max()};
  const int64_t scalar = 1234567890123;
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"step", "17"}};
  const std::string file = path("m.safetensors");
  write_safetensors(file,
                    {{"w", DType::F32, {2, 3}, f32.data()},
                     {"d", DType::F64, {4}, f64.data()},
                     {"ids", DType::I64, {5}, i64.data()},
                     {"step", DType::I64, {}, &scalar},
                     {"empty", DType::F32, {0, 7}, nullptr}},
                    meta);

  const SafetensorsFile st(file);
  EXPECT_EQ(st.metadata(), meta);
  ASSERT_EQ(st.tensors().size(), 5u);
  // Data-offset order is the order written; the empty tensor sits at the end.
  std::vector<std::string> order;
  for (const auto& t : st.tensors()) order.push_back(t.name);
  EXPECT_EQ(order, (std::vector<std::string>{"w", "d", "ids", "step", "empty"}));

  const TensorView* w = st.find("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, DType::F32);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w->numel(), 6);
  EXPECT_TRUE(same_bytes(w, f32));
  EXPECT_TRUE(same_bytes(st.find("d"), f64));
  EXPECT_TRUE(same_bytes(st.find("ids"), i64));

  const TensorView* s = st.find("step");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(s->numel(), 1);
  EXPECT_TRUE(same_bytes(s, std::vector<int64_t>{scalar}));

  const TensorView* e = st.find("empty");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->numel(), 0);
  EXPECT_EQ(e->nbytes, 0u);
  EXPECT_EQ(st.find("absent"), nullptr);
}

TEST_F(SafetensorsTest, HeaderIsPaddedToEightBytesAndMetadataOmittedWhenEmpty) {
  const float x = 1.0f;
  const std::string file = path("pad.safetensors");
  write_safetensors(file, {{"abc", DType::F32, {1}, &x}});
  const std::string bytes = read_file(file);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);  // the test host is little-endian, like the format
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + sizeof x);
  const std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.find("__metadata__"), std::string::npos);
  EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1),
            R"({"abc":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})");
  EXPECT_TRUE(SafetensorsFile(file).metadata().empty());
}

TEST_F(SafetensorsTest, F16ConvertsToFloat) {
  const std::vector<uint16_t> h = {0x3C00, 0xC000, 0x0001, 0x03FF, 0x7BFF, 0x7C00, 0xFC00, 0x8000, 0x3555};
  const std::string file = path("h.safetensors");
  write_safetensors(file, {{"h", DType::F16, {3, 3}, h.data()}});
  const SafetensorsFile st(file);
  std::vector<float> f(h.size());
  convert_to(*st.find("h"), f.data());
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], -2.0f);
  EXPECT_EQ(f[2], std::ldexp(1.0f, -24));         // smallest subnormal
  EXPECT_EQ(f[3], std::ldexp(1023.0f, -24));      // largest subnormal
  EXPECT_EQ(f[4], 65504.0f);                      // largest finite
  EXPECT_EQ(f[5], std::numeric_limits<float>::infinity());
  EXPECT_EQ(f[6], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(f[7], 0.0f);
  EXPECT_TRUE(std::signbit(f[7]));
  EXPECT_EQ(f[8], 0.333251953125f);

  std::vector<double> d(h.size());
  convert_to(*st.find("h"), d.data());
  EXPECT_EQ(d[1], -2.0);
  EXPECT_EQ(d[2], std::ldexp(1.0, -24));
}

TEST_F(SafetensorsTest, BF16ConvertsToFloat) {
  const std::vector<uint16_t> b = {0x3F80, 0xC040, 0x0001, 0x7F80, 0xFF80, 0x4049, 0x8000};
  const std::string file = path("b.safetensors");
  write_safetensors(file, {{"b", DType::BF16, {7}, b.data()}});
  const SafetensorsFile st(file);
  std::vector<float> f(b.size());
  convert_to(*st.find("b"), f.data());
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], -3.0f);
  EXPECT_EQ(f[2], std::ldexp(1.0f, -133));  // smallest subnormal
  EXPECT_EQ(f[3], std::numeric_limits<float>::infinity());
  EXPECT_EQ(f[4], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(f[5], 3.140625f);
  EXPECT_TRUE(std::signbit(f[6]));
}

TEST_F(SafetensorsTest, F32AndF64ConvertBothWays) {
  const std::vector<double> d = {0.1, -2.5, 1e300};
  const std::vector<float> f = {0.1f, -2.5f, 1e-45f};
  const std::string file = path("c.safetensors");
  write_safetensors(file, {{"d", DType::F64, {3}, d.data()}, {"f", DType::F32, {3}, f.data()}});
  const SafetensorsFile st(file);
  std::vector<float> d_as_f(3);
  convert_to(*st.find("d"), d_as_f.data());
  EXPECT_EQ(d_as_f[0], 0.1f);
  EXPECT_EQ(d_as_f[1], -2.5f);
  EXPECT_EQ(d_as_f[2], std::numeric_limits<float>::infinity());
  std::vector<double> f_as_d(3);
  convert_to(*st.find("f"), f_as_d.data());
  EXPECT_EQ(f_as_d[0], static_cast<double>(0.1f));
  EXPECT_EQ(f_as_d[2], static_cast<double>(1e-45f));
}

TEST_F(SafetensorsTest, IntegerTensorDoesNotConvert) {
  const std::vector<int32_t> v = {1, 2};
  const std::string file = path("i.safetensors");
  write_safetensors(file, {{"token_ids", DType::I32, {2}, v.data()}});
  const SafetensorsFile st(file);
  std::vector<float> f(2);
  const std::string msg = error_of([&] { convert_to(*st.find("token_ids"), f.data()); });
  EXPECT_CONTAINS(msg, "'token_ids'");
  EXPECT_CONTAINS(msg, "I32");
}

TEST_F(SafetensorsTest, MovedFileKeepsItsViews) {
  const std::vector<float> v = {4, 5};
  const std::string file = path("mv.safetensors");
  write_safetensors(file, {{"v", DType::F32, {2}, v.data()}});
  SafetensorsFile a(file);
  SafetensorsFile b(std::move(a));
  EXPECT_TRUE(same_bytes(b.find("v"), v));
  SafetensorsFile c(file);
  c = std::move(b);
  EXPECT_TRUE(same_bytes(c.find("v"), v));
}

TEST_F(SafetensorsTest, SingleFileDirectory) {
  const std::vector<float> v = {1, 2, 3};
  write_safetensors(path("model.safetensors"), {{"b", DType::F32, {3}, v.data()}, {"a", DType::F32, {0}, nullptr}});
  const SafetensorsSet set(dir_.string());
  EXPECT_EQ(set.names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(set.files(), std::vector<std::string>{path("model.safetensors")});
  EXPECT_TRUE(same_bytes(set.find("b"), v));
}

// Two shards and an index, laid out as Hugging Face writes them.
void write_sharded(const std::string& dir, const std::vector<float>& a, const std::vector<float>& b,
                   const std::vector<double>& c) {
  write_safetensors(dir + "/model-00001-of-00002.safetensors",
                    {{"layer.0.a", DType::F32, {2}, a.data()}, {"layer.0.b", DType::F32, {1, 2}, b.data()}});
  write_safetensors(dir + "/model-00002-of-00002.safetensors", {{"layer.1.c", DType::F64, {3}, c.data()}});
  write_file_atomic(dir + "/model.safetensors.index.json", R"({
  "metadata": {"total_size": 40},
  "weight_map": {
    "layer.0.a": "model-00001-of-00002.safetensors",
    "layer.0.b": "model-00001-of-00002.safetensors",
    "layer.1.c": "model-00002-of-00002.safetensors"
  }
})");
}

TEST_F(SafetensorsTest, ShardedDirectory) {
  const std::vector<float> a = {1, 2}, b = {3, 4};
  const std::vector<double> c = {5, 6, 7};
  write_sharded(dir_.string(), a, b, c);
  const SafetensorsSet set(dir_.string());
  EXPECT_EQ(set.names(), (std::vector<std::string>{"layer.0.a", "layer.0.b", "layer.1.c"}));
  EXPECT_EQ(set.files().size(), 2u);  // each shard opened once
  EXPECT_TRUE(same_bytes(set.find("layer.0.a"), a));
  EXPECT_TRUE(same_bytes(set.find("layer.0.b"), b));
  EXPECT_TRUE(same_bytes(set.find("layer.1.c"), c));
  EXPECT_EQ(set.find("layer.2.d"), nullptr);
}

TEST_F(SafetensorsTest, WriteLeavesNoTempFile) {
  const float x = 2;
  write_safetensors(path("out.safetensors"), {{"x", DType::F32, {}, &x}});
  EXPECT_EQ(dir_entries(), std::vector<std::string>{"out.safetensors"});
}

TEST_F(SafetensorsTest, WriteReplacesExistingFileAtomically) {
  const std::string file = path("ckpt.safetensors");
  const std::vector<float> old_v = {1, 2, 3}, new_v = {9, 8};
  write_safetensors(file, {{"old", DType::F32, {3}, old_v.data()}});
  const SafetensorsFile before(file);
  write_safetensors(file, {{"new", DType::F32, {2}, new_v.data()}});
  // The rename swapped in a new inode: a reader of the old file still sees it whole.
  EXPECT_TRUE(same_bytes(before.find("old"), old_v));
  const SafetensorsFile after(file);
  EXPECT_EQ(after.find("old"), nullptr);
  EXPECT_TRUE(same_bytes(after.find("new"), new_v));
  EXPECT_EQ(dir_entries(), std::vector<std::string>{"ckpt.safetensors"});
}

TEST_F(SafetensorsTest, FailedWriteRemovesTempFile) {
  // A non-empty directory where the file should go makes the final rename fail.
  fs::create_directories(dir_ / "taken" / "inside");
  const float x = 1;
  const std::string msg = error_of([&] { write_safetensors(path("taken"), {{"x", DType::F32, {}, &x}}); });
  EXPECT_CONTAINS(msg, "taken");
  EXPECT_EQ(dir_entries(), std::vector<std::string>{"taken"});
}

TEST_F(SafetensorsTest, WriteRejectsDuplicateAndReservedNames) {
  const float x = 1;
  const std::string file = path("dup.safetensors");
  EXPECT_CONTAINS(error_of([&] { write_safetensors(file, {{"x", DType::F32, {}, &x}, {"x", DType::F32, {}, &x}}); }),
                  "'x' is given twice");
  EXPECT_CONTAINS(error_of([&] { write_safetensors(file, {{"__metadata__", DType::F32, {}, &x}}); }), "reserved");
  EXPECT_TRUE(dir_entries().empty());
}

// --- Corrupt or malformed inputs: each must throw strata::Error naming the file. ---

TEST_F(SafetensorsTest, FileShorterThanEightBytes) {
  const std::string file = path("short.safetensors");
  write_bytes(file, "abcde");
  const std::string msg = error_of([&] { SafetensorsFile f(file); });
  EXPECT_CONTAINS(msg, "short.safetensors");
  EXPECT_CONTAINS(msg, "5 bytes, shorter than");
}

TEST_F(SafetensorsTest, HeaderLengthPastEndOfFile) {
  const std::string file = path("trunc.safetensors");
  write_bytes(file, le64(1000) + "{}");
  const std::string msg = error_of([&] { SafetensorsFile f(file); });
  EXPECT_CONTAINS(msg, "trunc.safetensors");
  EXPECT_CONTAINS(msg, "header length 1000 runs past the end of the file");
}

TEST_F(SafetensorsTest, HeaderLengthAbsurd) {
  const std::string file = path("huge.safetensors");
  write_bytes(file, le64(200u << 20));
  fs::resize_file(file, 300u << 20);  // sparse: costs no disk
  const std::string msg = error_of([&] { SafetensorsFile f(file); });
  EXPECT_CONTAINS(msg, "huge.safetensors");
  EXPECT_CONTAINS(msg, "exceeds the");
}

TEST_F(SafetensorsTest, HeaderInvalidJson) {
  const std::string file = path("badjson.safetensors");
  write_raw(file, R"({"a": {"dtype": "F32",)", 0);
  const std::string msg = error_of([&] { SafetensorsFile f(file); });
  EXPECT_CONTAINS(msg, "badjson.safetensors");
  EXPECT_CONTAINS(msg, "header is not valid JSON");
}

TEST_F(SafetensorsTest, HeaderNotAnObject) {
  const std::string file = path("array.safetensors");
  write_raw(file, "[1, 2]", 0);
  const std::string msg = error_of([&] { SafetensorsFile f(file); });
  EXPECT_CONTAINS(msg, "array.safetensors");
  EXPECT_CONTAINS(msg, "header must be a JSON object, found array");
}

TEST_F(SafetensorsTest, OffsetsOutOfRange) {
  const std::string file = path("range.safetensors");
  write_raw(file, R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})", 16);
  const std::string msg = error_of([&] { SafetensorsFile f(file); });
  EXPECT_CONTAINS(msg, "range.safetensors");
  EXPECT_CONTAINS(msg, "tensor 'w'");
  EXPECT_CONTAINS(msg, "data_offsets [8,24] run past the end of the 16-byte data section");
}

TEST_F(SafetensorsTest, OffsetsReversed) {
  const std::string file = path("rev.safetensors");
  write_raw(file, R"({"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}})", 16);
  const std::string msg = error_of([&] { SafetensorsFile f(file); });
  EXPECT_CONTAINS(msg, "rev.safetensors");
  EXPECT_CONTAINS(msg, "begin after end");
}

TEST_F(SafetensorsTest, OverlappingOffsets) {
  const std::string file = path("overlap.safetensors");
  write_raw(file,
            R"({"x": {"dtype": "F32", "shape": [5], "data_offsets": [0, 20]},
                "bert.pooler.dense.weight": {"dtype": "F32", "shape": [10], "data_offsets": [10, 50]},
                "gap": {"dtype": "F32", "shape": [0], "data_offsets": [12, 12]}})",
            64);
  const std::string msg = error_of([&] { SafetensorsFile f(file); });
  EXPECT_CONTAINS(msg, "overlap.safetensors: tensor 'bert.pooler.dense.weight': data_offsets [10,50] "
                       "overlap tensor 'x' [0,20]");
}

TEST_F(SafetensorsTest, UnknownDtype) {
  const std::string file = path("dtype.safetensors");
  write_raw(file, R"({"w": {"dtype": "F99", "shape": [1], "data_offsets": [0, 4]}})", 4);
  const std::string msg = error_of([&] { SafetensorsFile f(file); });
  EXPECT_CONTAINS(msg, "dtype.safetensors");
  EXPECT_CONTAINS(msg, "tensor 'w'");
  EXPECT_CONTAINS(msg, "unknown dtype 'F99'");
}

TEST_F(SafetensorsTest, ByteSpanDisagreesWithShape) {
  const std::string file = path("span.safetensors");
  write_raw(file, R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}})", 24);
  const std::string msg = error_of([&] { SafetensorsFile f(file); });
  EXPECT_CONTAINS(msg, "span.safetensors");
  EXPECT_CONTAINS(msg, "tensor 'w': shape [2, 3] of F32 needs 24 bytes, but data_offsets [0,20] span 20");
}

TEST_F(SafetensorsTest, ShapeWhoseByteCountOverflows) {
  const std::string file = path("wrap.safetensors");
  // 2^32 * 2^32 wraps to 0 in 64 bits; it must not pass as an empty tensor.
  write_raw(file, R"({"w": {"dtype": "U8", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})", 0);
  const std::string msg = error_of([&] { SafetensorsFile f(file); });
  EXPECT_CONTAINS(msg, "wrap.safetensors");
  EXPECT_CONTAINS(msg, "more than 2^64");
}

TEST_F(SafetensorsTest, NegativeOrFractionalShape) {
  const std::string file = path("neg.safetensors");
  write_raw(file, R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}})", 0);
  std::string msg = error_of([&] { SafetensorsFile f(file); });
  EXPECT_CONTAINS(msg, "neg.safetensors: tensor 'w': \"shape\" [-1]: expected non-negative integers, found -1");
  write_raw(file, R"({"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 0]}})", 0);
  msg = error_of([&] { SafetensorsFile f(file); });
  EXPECT_CONTAINS(msg, "found 1.5");
}

TEST_F(SafetensorsTest, MissingField) {
  const std::string file = path("missing.safetensors");
  write_raw(file, R"({"w": {"dtype": "F32", "shape": [1]}})", 4);
  const std::string msg = error_of([&] { SafetensorsFile f(file); });
  EXPECT_CONTAINS(msg, "missing.safetensors: tensor 'w': missing \"data_offsets\"");
}

TEST_F(SafetensorsTest, MetadataValueNotString) {
  const std::string file = path("meta.safetensors");
  write_raw(file, R"({"__metadata__": {"step": 3}})", 0);
  const std::string msg = error_of([&] { SafetensorsFile f(file); });
  EXPECT_CONTAINS(msg, "meta.safetensors");
  EXPECT_CONTAINS(msg, "\"__metadata__\" entry 'step' must be a string");
}

TEST_F(SafetensorsTest, DuplicateTensorName) {
  const std::string file = path("twice.safetensors");
  write_raw(file,
            R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
                "w": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}})",
            2);
  const std::string msg = error_of([&] { SafetensorsFile f(file); });
  EXPECT_CONTAINS(msg, "twice.safetensors: header names 'w' twice");
}

TEST_F(SafetensorsTest, ShardListedInIndexMissing) {
  const std::vector<float> a = {1, 2}, b = {3, 4};
  const std::vector<double> c = {5, 6, 7};
  write_sharded(dir_.string(), a, b, c);
  fs::remove(dir_ / "model-00002-of-00002.safetensors");
  const std::string msg = error_of([&] { SafetensorsSet s(dir_.string()); });
  EXPECT_CONTAINS(msg, "model.safetensors.index.json");
  EXPECT_CONTAINS(msg, "shard 'model-00002-of-00002.safetensors' (listed for tensor 'layer.1.c') is missing");
}

TEST_F(SafetensorsTest, WeightMapNamesTensorAbsentFromShard) {
  const std::vector<float> a = {1, 2}, b = {3, 4};
  const std::vector<double> c = {5, 6, 7};
  write_sharded(dir_.string(), a, b, c);
  write_file_atomic(path("model.safetensors.index.json"),
                    R"({"weight_map": {"layer.0.a": "model-00001-of-00002.safetensors",
                                       "ghost": "model-00002-of-00002.safetensors"}})");
  const std::string msg = error_of([&] { SafetensorsSet s(dir_.string()); });
  EXPECT_CONTAINS(msg, "model.safetensors.index.json");
  EXPECT_CONTAINS(msg, "tensor 'ghost'");
  EXPECT_CONTAINS(msg, "model-00002-of-00002.safetensors, which has no such tensor");
}

// An index from the Hub names its shards; one that points outside the model directory (a
// parent directory, an absolute path) is refused, even where that file exists.
TEST_F(SafetensorsTest, ShardOutsideTheModelDirectoryIsRefused) {
  const std::vector<float> a = {1, 2}, b = {3, 4};
  const std::vector<double> c = {5, 6, 7};
  write_sharded(dir_.string(), a, b, c);
  const fs::path outside = dir_.parent_path() / (dir_.filename().string() + "-outside.safetensors");
  fs::copy_file(dir_ / "model-00001-of-00002.safetensors", outside, fs::copy_options::overwrite_existing);
  for (const std::string& shard : {"../" + outside.filename().string(), outside.string(), std::string()}) {
    write_file_atomic(path("model.safetensors.index.json"),
                      json{{"weight_map", {{"layer.0.a", shard}}}}.dump());
    const std::string msg = error_of([&] { SafetensorsSet s(dir_.string()); });
    EXPECT_CONTAINS(msg, "model.safetensors.index.json: weight_map entry 'layer.0.a' names shard '" + shard + "'");
    EXPECT_CONTAINS(msg, "a shard must be a file inside the model directory");
  }
  fs::remove(outside);
}

TEST_F(SafetensorsTest, NoModelFileInDirectory) {
  write_bytes(path("config.json"), "{}");
  const std::string msg = error_of([&] { SafetensorsSet s(dir_.string()); });
  EXPECT_CONTAINS(msg, dir_.string());
  EXPECT_CONTAINS(msg, "no model.safetensors, model.safetensors.index.json, pytorch_model.bin or "
                       "pytorch_model.bin.index.json");
}

// --- files.h ---

TEST_F(SafetensorsTest, ReadJsonReportsLineAndColumn) {
  const std::string file = path("config.json");
  write_bytes(file, "{\n  \"a\": 1,\n  \"b\": x\n}\n");
  const std::string msg = error_of([&] { read_json_file(file); });
  EXPECT_CONTAINS(msg, file + ": invalid JSON at line 3, column 8: ");
  EXPECT_CONTAINS(msg, "invalid literal");
  EXPECT_EQ(msg.find("[json.exception"), std::string::npos);
}

// The training log grows a line at a time; a full disk must stop the run with the file named,
// not lose lines silently (/dev/full fails every write with ENOSPC).
TEST_F(SafetensorsTest, AppendToAFullDiskNamesTheFile) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const std::string msg = error_of([&] { append_to_file("/dev/full", "{\"loss\": 1.0}\n"); });
  EXPECT_CONTAINS(msg, "/dev/full: write to /dev/full failed after 0 of 14 bytes: No space left on device");
  append_to_file(path("log.jsonl"), "a\n");
  append_to_file(path("log.jsonl"), "b\n");
  EXPECT_EQ(read_file(path("log.jsonl")), "a\nb\n");
}

TEST_F(SafetensorsTest, ReadFileOfMissingPathNamesIt) {
  const std::string msg = error_of([&] { read_file(path("nope.txt")); });
  EXPECT_CONTAINS(msg, "nope.txt: cannot open");
}

TEST_F(SafetensorsTest, WriteFileAtomicRoundTrip) {
  const std::string file = path("a.txt");
  write_file_atomic(file, "first");
  write_file_atomic(file, std::string("second\0with nul", 15));
  EXPECT_EQ(read_file(file), std::string("second\0with nul", 15));
  write_file_atomic(path("j.json"), R"({"k": [1, 2]})");
  EXPECT_EQ(read_json_file(path("j.json"))["k"][1], 2);
  EXPECT_EQ(dir_entries(), (std::vector<std::string>{"a.txt", "j.json"}));
}

}  // namespace
}  // namespace strata::io
