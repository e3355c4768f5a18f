// A 64-bit fingerprint of bytes and files, for checking that every rank of a job starts from
// the same options and model files (dist::check_same_on_all_ranks) without every rank reading
// every weight. A file of up to 1 MiB (config.json, vocabularies) is hashed whole. A larger
// one is hashed by its size, its head and 16 chunks of 4 KiB spread evenly over the rest:
// the head of a .safetensors file is its whole header (every tensor's name, dtype, shape and
// data offsets), of any other file its first 64 KiB. So a 500 MB model costs a rank about
// header + 64 KiB of reads, and two different weight files of one architecture (another
// checkpoint, another seed) still differ, because trained weights differ in every chunk. A
// change confined to bytes between the chunks goes unseen: this guards against mixed-up
// files, not tampering.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace strata::io {

class Fingerprint {
 public:
  void add(std::string_view bytes);
  void add_file(const std::string& path);  // throws strata::Error naming the path
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0x9e3779b97f4a7c15ull;
};

}  // namespace strata::io
