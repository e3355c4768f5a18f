// strata.TrainingArguments's checks: keyword arguments become the options of a YAML config,
// read by the same parser (train/training_args.h), so a name, a value and a combination are
// accepted or refused exactly as in a config file, with the same did-you-mean errors.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <pybind11/stl.h>
#include <yaml-cpp/yaml.h>

#include "python/bindings.h"
#include "python/training_arguments.h"
#include "train/training_args.h"
#include "util/error.h"

namespace strata::python {

namespace {
// The value standing for the options a Trainer gives (the model, the data) in a
// TrainingArguments checked alone; Python leaves them out of what it shows.
constexpr const char* kGivenToTrainer = "(given to the Trainer)";
}  // namespace

TrainingArguments parse_arguments(const std::vector<std::pair<std::string, std::string>>& options) {
  // The distribution / deepspeed blocks are read from the config's root; the rest are
  // overrides, each named in errors as the keyword it came from.
  std::string root = "{}";
  std::vector<ArgumentOverride> overrides;
  overrides.reserve(options.size());
  for (const auto& [key, json] : options) {
    if (key == "distribution" || key == "deepspeed") {
      YAML::Node block = YAML::Load(json);
      YAML::Node r = YAML::Load(root);
      r[key] = block;
      YAML::Emitter out;
      out << YAML::Flow << r;
      root = out.c_str();
      continue;
    }
    YAML::Node value;
    try {
      value = YAML::Load(json);
    } catch (const YAML::Exception& e) {
      fail("TrainingArguments(", key, "=...): the value is not a plain value (", e.msg, ")");
    }
    overrides.push_back({key, value, "TrainingArguments(" + key + "=...)"});
  }
  return parse_training_arguments_with(root, "TrainingArguments", overrides);
}

void bind_training_arguments(py::module_& m) {
  // (name, value as JSON) pairs -> the options' canonical JSON (every field, defaults filled),
  // or StrataError naming the keyword that is wrong.
  // TrainingArguments alone, before a Trainer gives it the model and the data: those options
  // are checked once the Trainer has them, so they are filled in here unless given.
  m.attr("GIVEN_TO_TRAINER") = kGivenToTrainer;
  auto standalone = [](std::vector<std::pair<std::string, std::string>> options) {
    auto given = [&](const char* key) {
      for (const auto& o : options)
        if (o.first == key) return true;
      return false;
    };
    for (const char* key : {"model_name_or_path", "train_file", "validation_file"})
      if (!given(key)) options.insert(options.begin(), {key, nlohmann::json(kGivenToTrainer).dump()});
    return parse_arguments(options);
  };
  m.def("check_training_arguments",
        [standalone](const std::vector<std::pair<std::string, std::string>>& options) {
          return training_arguments_json(standalone(options));
        },
        py::arg("options"));
  m.def("format_training_arguments",
        [standalone](const std::vector<std::pair<std::string, std::string>>& options) {
          return format_training_arguments(standalone(options));
        },
        py::arg("options"));
}

}  // namespace strata::python
