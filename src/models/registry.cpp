// The architectures strata knows, by HF model_type. Adding one: a folder under models/ that
// defines its Architecture, and one line here.
#include "models/registry.h"

#include <cstring>

#include "models/albert/albert_architecture.h"
#include "models/bart/bart_architecture.h"
#include "models/bert/bert_architectures.h"
#include "models/gpt2/gpt2_architecture.h"
#include "models/t5/t5_architecture.h"
#include "kernels/device.h"
#include "util/error.h"

namespace strata {

const std::vector<const Architecture*>& all_architectures() {
  static const std::vector<const Architecture*> all = {&kBertArchitecture, &kRobertaArchitecture,
                                                       &kDistilBertArchitecture, &kAlbertArchitecture,
                                                       &kGpt2Architecture, &kBartArchitecture,
                                                       &kT5Architecture};
  return all;
}

const Architecture* find_architecture(std::string_view model_type) {
  for (const Architecture* a : all_architectures())
    if (model_type == a->model_type) return a;
  return nullptr;
}

const char* Architecture::class_suffix(Task t) const {
  for (const auto& [task, suffix] : classes)
    if (task == t) return suffix;
  return nullptr;
}

namespace {
const Architecture& architecture_for(const ModelConfig& c) {
  const Architecture* a = find_architecture(c.model_type);
  if (!a) fail("model_type '", c.model_type, "' is not supported");
  if (c.tensor_split.split() && !a->tensor_parallel)
    fail("model_type '", c.model_type, "' has no tensor-parallel layers (tensor_parallel_degree ",
         c.tensor_split.degree, ")");
  return *a;
}
}  // namespace

template <>
std::unique_ptr<Model<float>> make_model<float>(const ModelConfig& c) {
  return architecture_for(c).make_f32(c);
}

template <>
std::unique_ptr<Model<double>> make_model<double>(const ModelConfig& c) {
  return architecture_for(c).make_f64(c);
}

}  // namespace strata
