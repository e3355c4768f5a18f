// Arbitrary bytes (invalid UTF-8 included) encoded with every tokenizer bundled with strata's
// tests: the four reference tokenizers (WordPiece, byte-level BPE twice, Unigram) and the
// synthetic ones covering byte fallback, Metaspace, NFKD, Llama-3's split regex and the rest.
// Each is also asked to encode the input as a pair, and to decode what it produced.
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <filesystem>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/files.h"
#include "scratch_dir.h"
#include "tokenizers/tokenizer.h"
#include "util/error.h"

namespace {

std::vector<strata::tok::Tokenizer>& tokenizers() {
  static std::vector<strata::tok::Tokenizer> all;
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(STRATA_FIXTURE_DIR) / "tokenizers";
  for (const char* name : {"albert-spm-8k", "bert-wordpiece-8k", "bpe-8k", "gpt2"})
    tokenizers().push_back(strata::tok::Tokenizer::from_dir((root / "reference" / name).string()));
  std::vector<fs::path> synthetic;
  for (const fs::directory_entry& e : fs::directory_iterator(root / "synthetic"))
    if (e.path().extension() == ".json" && e.path().stem().extension() != ".expected") synthetic.push_back(e.path());
  std::sort(synthetic.begin(), synthetic.end());
  // A synthetic definition is a whole tokenizer.json, or {"base": reference, "patch": {...}}
  // (as tests/test_tokenizers.cpp reads them).
  for (const fs::path& p : synthetic) {
    nlohmann::json def = strata::io::read_json_file(p.string());
    if (def.contains("base")) {
      nlohmann::json base = strata::io::read_json_file(
          (root / "reference" / def["base"].get<std::string>() / "tokenizer.json").string());
      for (const auto& [k, v] : def["patch"].items()) base[k] = v;
      def = std::move(base);
    }
    const std::string path = strata::fuzz::scratch().write(p.filename().string(), def.dump());
    tokenizers().push_back(strata::tok::Tokenizer::from_tokenizer_json(path));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const strata::tok::Tokenizer& t : tokenizers()) {
    try {
      const strata::tok::Encoding e = t.encode(text);
      if (e.ids.size() != e.offsets.size() || e.ids.size() != e.tokens.size()) __builtin_trap();
      t.decode(e.ids, false);
      t.encode_pair(text.substr(0, size / 2), text.substr(size / 2));
    } catch (const strata::Error&) {
    }
  }
  return 0;
}
