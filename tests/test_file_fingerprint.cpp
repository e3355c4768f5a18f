// io::Fingerprint: files with the same bytes agree, other weights of the same shapes or another
// header differ, and a large weights file is not read whole.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "io/file_fingerprint.h"
#include "test_util_fs.h"
#include "util/rng.h"

namespace strata {
namespace {

using test::ScratchDir;

uint64_t fingerprint(const std::string& path) {
  io::Fingerprint f;
  f.add_file(path);
  return f.value();
}

// A .safetensors file of one F32 tensor of n values: pseudo-random under `seed`, or, with
// seed 0, a sparse file of zeros that takes no disk space.
void write_weights(const std::string& path, int64_t n, uint64_t seed, const std::string& name = "w") {
  std::string header = "{\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(n) +
                       "],\"data_offsets\":[0," + std::to_string(4 * n) + "]}}";
  header.resize((header.size() + 7) / 8 * 8, ' ');
  std::string head(8, '\0');
  for (int i = 0; i < 8; ++i) head[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << head << header;
  if (seed == 0) {
    out.close();
    std::filesystem::resize_file(path, 8 + header.size() + 4 * static_cast<uint64_t>(n));
    return;
  }
  const CounterRng rng(seed, 0);
  std::vector<float> data(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) data[static_cast<size_t>(i)] = rng.uniform(static_cast<uint64_t>(i));
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(4 * n));
}

// Bytes this process has read through read()/pread() so far (Linux task I/O accounting).
uint64_t bytes_read() {
  std::ifstream io("/proc/self/io");
  for (std::string key; io >> key;) {
    uint64_t v = 0;
    io >> v;
    if (key == "rchar:") return v;
  }
  ADD_FAILURE() << "no rchar in /proc/self/io";
  return 0;
}

TEST(FileFingerprint, SameBytesAgreeOtherWeightsOrHeadersDiffer) {
  const ScratchDir dir;
  const int64_t n = 1 << 20;  // 4 MiB: above the size hashed whole
  write_weights(dir.path("a.safetensors"), n, 1);
  std::filesystem::copy_file(dir.path("a.safetensors"), dir.path("copy.safetensors"));
  write_weights(dir.path("b.safetensors"), n, 2);
  write_weights(dir.path("renamed.safetensors"), n, 1, "v");
  EXPECT_EQ(fingerprint(dir.path("a.safetensors")), fingerprint(dir.path("copy.safetensors")));
  EXPECT_NE(fingerprint(dir.path("a.safetensors")), fingerprint(dir.path("b.safetensors")));
  EXPECT_NE(fingerprint(dir.path("a.safetensors")), fingerprint(dir.path("renamed.safetensors")));
  // Small files are hashed whole: one byte anywhere counts.
  test::write_text(dir.path("config.json"), "{\"hidden_size\": 32}");
  const uint64_t config = fingerprint(dir.path("config.json"));
  test::write_text(dir.path("config.json"), "{\"hidden_size\": 33}");
  EXPECT_NE(fingerprint(dir.path("config.json")), config);
  test::expect_error([&] { fingerprint(dir.path("missing.safetensors")); }, {"missing.safetensors", "cannot open"});
}

TEST(FileFingerprint, LargeWeightsAreNotReadWhole) {
  const ScratchDir dir;
  const int64_t n = int64_t{1} << 28;  // 1 GiB of F32, sparse on disk
  write_weights(dir.path("big.safetensors"), n, 0);
  const uint64_t before = bytes_read();
  fingerprint(dir.path("big.safetensors"));
  const uint64_t read = bytes_read() - before;
  EXPECT_LT(read, uint64_t{1} << 20) << read << " bytes read to fingerprint a 1 GiB file";
  EXPECT_GT(read, uint64_t{16} * 4096);  // the header and every sampled chunk
}

}  // namespace
}  // namespace strata
