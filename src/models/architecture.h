// What an architecture tells the rest of strata about itself: its HF model_type and class
// names, the tasks it has heads for, how to read its config.json fields, and how to build
// it. Each architecture defines one Architecture in its own folder; registry.cpp lists them.
// Adding an architecture touches neither the Trainer nor the CLI.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/config.h"
#include "models/config_fields.h"

namespace strata {

template <typename T>
class Model;

struct Architecture {
  const char* model_type;   // "bert"
  const char* class_prefix;  // "Bert" -> BertForMaskedLM
  const char* base_prefix;   // the base model's parameter prefix inside a task model, "bert."
  // The tasks it has heads for, each with its HF class suffix ("ForMaskedLM", "LMHeadModel").
  std::vector<std::pair<Task, const char*>> classes;
  // Reads the architecture's own config.json fields into `c` and checks them. The common
  // fields (vocabulary, labels, problem_type) are read by parse_model_config.
  void (*parse)(const ConfigFields& f, ModelConfig& c);
  std::unique_ptr<Model<float>> (*make_f32)(const ModelConfig& c);
  std::unique_ptr<Model<double>> (*make_f64)(const ModelConfig& c);
  // Whether its models run split over tensor-parallel ranks (ModelConfig::tensor_split).
  bool tensor_parallel = false;

  const char* class_suffix(Task t) const;  // null when the task has no head here
};

// The architecture of a model_type, or null.
const Architecture* find_architecture(std::string_view model_type);
const std::vector<const Architecture*>& all_architectures();

}  // namespace strata
