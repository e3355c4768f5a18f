// The arguments of HF's TrainingArguments (transformers v4.36) and of its example scripts'
// ModelArguments / DataTrainingArguments that strata has no option for, so that a config
// copied from an HF example loads. Each is either
//  - ignored: it does not apply here (the Hub, CUDA, torch internals, logging verbosity);
//    set away from HF's default, it is named in the one warning of the run;
//  - refused: strata cannot do what it asks (fp16, a Hub dataset, label smoothing, ...); set
//    away from HF's default, it is an error saying why and what to do instead;
//  - inherent: strata always behaves as the option asks (full determinism), so any value is
//    accepted silently.
// docs/hf_compat.md lists them with the reasons.
#pragma once
#include <span>
#include <string_view>

#include <yaml-cpp/yaml.h>

namespace strata {

struct HfOtherArg {
  enum class Kind { Ignored, Refused, Inherent };
  const char* name;
  Kind kind;
  // HF's default as YAML text ("" for None / False / 0 / "" / []); a value equal to it is
  // what an HF config writes when it does not mean to use the option.
  const char* hf_default;
  const char* refusal;  // Refused: why, and what to set instead
};

// Every entry, in HF's order (the command line accepts each as an option).
std::span<const HfOtherArg> hf_other_args();

// The entry for `name`, or null when HF has no such argument or strata has an option for it.
const HfOtherArg* find_hf_other_arg(std::string_view name);

// True when `value` is HF's default for the argument: null, an empty sequence or mapping, or
// (by type) the same bool / number / string; "" defaults also match false, 0 and "".
bool at_hf_default(const HfOtherArg& arg, const YAML::Node& value);

}  // namespace strata
