// PyTorch's pytorch_model.bin read without Python (io/torch_bin.h), against files torch.save
// wrote (tests/fixtures/torch_bin/make_torch_bin.py): the tensors equal the model's
// safetensors, a model loads and steps the same from either, and what is not a state dict of
// tensors - a pickle calling os.system, the pre-1.6 format, a truncated archive, a
// non-contiguous tensor, shapes that disagree with config.json - is an error naming the file.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/files.h"
#include "io/safetensors.h"
#include "io/torch_bin.h"
#include "models/pretrained.h"
#include "test_util_fs.h"

namespace {

namespace fs = std::filesystem;
using strata::io::TensorView;
using strata::io::TorchBinFile;
using strata::test::ScratchDir;
namespace test = strata::test;

const std::string kDir = test::fixture("torch_bin");

bool same_tensor(const TensorView& a, const TensorView& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.nbytes == b.nbytes &&
         std::memcmp(a.data, b.data, a.nbytes) == 0;
}

TEST(TorchBin, StateDictEqualsTheModelsSafetensors) {
  const TorchBinFile bin(kDir + "/bert-seq-cls/pytorch_model.bin");
  const strata::io::SafetensorsFile st(test::fixture("bert-seq-cls/model.safetensors"));
  ASSERT_FALSE(st.tensors().empty());
  for (const TensorView& t : st.tensors()) {
    const TensorView* b = bin.find(t.name);
    ASSERT_NE(b, nullptr) << t.name;
    EXPECT_TRUE(same_tensor(t, *b)) << t.name;
  }
}

TEST(TorchBin, TensorsSharingAStorageAreViewsAtTheirOffsets) {
  const TorchBinFile bin(kDir + "/shared-storage.bin");
  ASSERT_EQ(bin.tensors().size(), 2u);
  const TensorView *a = bin.find("a"), *b = bin.find("b");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(b->shape, (std::vector<int64_t>{2, 4}));
  std::vector<float> va(4), vb(8);
  strata::io::convert_to<float>(*a, va.data());
  strata::io::convert_to<float>(*b, vb.data());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(va[i], i);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(vb[i], 4 + i);
}

// `strata step` from the .bin directory writes the tensors it writes from the safetensors one.
TEST(TorchBin, AModelStepsTheSameFromBinAndSafetensors) {
  const ScratchDir scratch;
  std::vector<std::string> outs;
  for (const std::string& model : {test::fixture("bert-seq-cls"), kDir + "/bert-seq-cls"}) {
    outs.push_back(scratch.path("out" + std::to_string(outs.size()) + ".safetensors"));
    const auto r = test::run_strata({"step", "--model", model, "--batch", test::fixture("bert-seq-cls.inputs.json"),
                                     "--out", outs.back(), "--optimizer", "adamw", "--lr", "1e-3", "--threads", "1"},
                                    scratch);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  const strata::io::SafetensorsFile a(outs[0]), b(outs[1]);
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (const TensorView& t : a.tensors()) {
    const TensorView* u = b.find(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_TRUE(same_tensor(t, *u)) << t.name;
  }
}

// TensorFlow-era BERT checkpoints name LayerNorm parameters gamma and beta; they load as
// weight and bias, as from_pretrained renames them.
TEST(TorchBin, GammaAndBetaLoadAsLayerNormWeightAndBias) {
  const ScratchDir scratch;
  const std::string dir = scratch.path("gamma-beta");
  fs::create_directories(dir);
  fs::copy_file(kDir + "/bert-seq-cls/config.json", dir + "/config.json");
  fs::copy_file(kDir + "/gamma-beta.bin", dir + "/pytorch_model.bin");
  strata::LoadReport from_bin, from_st;
  const auto a = strata::load_pretrained<float>(dir, &from_bin);
  const auto b = strata::load_pretrained<float>(test::fixture("bert-seq-cls"), &from_st);
  EXPECT_TRUE(from_bin.missing.empty()) << from_bin.missing.front();
  EXPECT_TRUE(from_bin.unexpected.empty()) << from_bin.unexpected.front();
  ASSERT_EQ(a->params().size(), b->params().size());
  EXPECT_EQ(std::memcmp(a->params().data(), b->params().data(), a->params().size() * sizeof(float)), 0);
}

TEST(TorchBin, APickleThatWouldRunCodeIsRefusedNamingTheCallable) {
  test::expect_error([] { TorchBinFile(kDir + "/calls-os-system.bin"); },
                     {"calls-os-system.bin", "refuses to load", "os.system", "tensors only"});
}

TEST(TorchBin, DamagedOrUnsupportedFilesAreErrorsNamingTheFile) {
  test::expect_error([] { TorchBinFile(kDir + "/legacy.bin"); }, {"legacy.bin", "legacy format", "before 1.6"});
  test::expect_error([] { TorchBinFile(kDir + "/truncated.bin"); }, {"truncated.bin", "truncated"});
  test::expect_error([] { TorchBinFile(kDir + "/transposed.bin"); }, {"transposed.bin", "non-contiguous"});
  test::expect_error([] { TorchBinFile(kDir + "/make_torch_bin.py"); }, {"make_torch_bin.py", "not a zip archive"});
}

TEST(TorchBin, ShapesDisagreeingWithConfigNameTheTensor) {
  const ScratchDir scratch;
  const std::string dir = scratch.path("bert");
  fs::create_directories(dir);
  fs::copy_file(kDir + "/bert-seq-cls/pytorch_model.bin", dir + "/pytorch_model.bin");
  nlohmann::json config = strata::io::read_json_file(kDir + "/bert-seq-cls/config.json");
  config["intermediate_size"] = 128;
  test::write_text(dir + "/config.json", config.dump());
  test::expect_error([&] { strata::load_pretrained<float>(dir); },
                     {dir, "bert.encoder.layer.0.intermediate.dense.weight", "[64, 32]", "[128, 32]"});
}

}  // namespace
