// `strata step`'s BATCH.json of arbitrary bytes, read against the configs of several tasks
// (class ids, regression targets, per-token tags, answer spans, ALBERT's sentence order),
// since what a valid batch is depends on the model it feeds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "models/batch_json.h"
#include "models/config.h"
#include "scratch_dir.h"
#include "util/error.h"

namespace {

std::vector<strata::ModelConfig>& configs() {
  static std::vector<strata::ModelConfig> all;
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  for (const char* name : {"bert-seq-cls", "bert-seq-cls-regression", "bert-seq-cls-multilabel", "bert-token-cls",
                           "bert-qa", "bert-masked-lm", "gpt2-causal-lm", "albert-pretraining"})
    configs().push_back(strata::load_model_config(std::string(STRATA_FIXTURE_DIR) + "/" + name));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = strata::fuzz::scratch().write("batch.json", data, size);
  for (const strata::ModelConfig& cfg : configs()) {
    try {
      const strata::Batch b = strata::read_batch_json(path, cfg);
      if (b.input_ids.size() != static_cast<size_t>(b.B) * static_cast<size_t>(b.T)) __builtin_trap();
    } catch (const strata::Error&) {
    }
  }
  return 0;
}
