#include "io/tfrecord.h"

#include <array>
#include <cstring>

#include "io/files.h"
#include "util/error.h"

namespace strata::io {

namespace {

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kTable = make_table();

template <typename T>
void put_le(std::string& out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

template <typename T>
T get_le(const std::string& s, size_t at) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}

}  // namespace

uint32_t crc32c(std::string_view bytes) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : bytes) c = kTable[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

uint32_t masked_crc32c(std::string_view bytes) {
  const uint32_t c = crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string tfrecord_frame(std::string_view data) {
  std::string out, len;
  put_le<uint64_t>(len, data.size());
  out += len;
  put_le<uint32_t>(out, masked_crc32c(len));
  out += data;
  put_le<uint32_t>(out, masked_crc32c(data));
  return out;
}

std::vector<std::string> read_tfrecords(const std::string& path) {
  const std::string bytes = read_file(path);
  std::vector<std::string> records;
  for (size_t at = 0; at < bytes.size();) {
    if (bytes.size() - at < 12) fail(path, ": truncated record header at byte ", at);
    const uint64_t n = get_le<uint64_t>(bytes, at);
    if (get_le<uint32_t>(bytes, at + 8) != masked_crc32c(std::string_view(bytes).substr(at, 8)))
      fail(path, ": record at byte ", at, ": the length's CRC does not match");
    if (bytes.size() - at - 12 < n + 4) fail(path, ": record at byte ", at, ": truncated (", n, " bytes announced)");
    const std::string_view data = std::string_view(bytes).substr(at + 12, n);
    if (get_le<uint32_t>(bytes, at + 12 + n) != masked_crc32c(data))
      fail(path, ": record at byte ", at, ": the data's CRC does not match");
    records.emplace_back(data);
    at += 12 + n + 4;
  }
  return records;
}

}  // namespace strata::io
