// The TrainingArguments options of `strata train | evaluate | predict` on the command line,
// as HfArgumentParser spells them: `--learning_rate 1e-4`, `--learning_rate=1e-4`, a bool
// bare (`--do_eval`) or with a value (`--do_eval false`), a list as several values
// (`--report_to tensorboard csv`), HF's older names (`--evaluation_strategy`), HF's arguments
// strata has no option for (accepted or refused as in a config file), and `--set key=value`.
// All come from the option table (train/training_args.h), so --help and the completion list
// exactly what the config file takes.
#pragma once
#include <map>
#include <vector>

#include "train/training_args.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace strata::cli {

class TrainingOptions {
 public:
  explicit TrainingOptions(CLI::App& cmd);
  // What the command line set, in its order, so that a later value wins as in the file.
  std::vector<ArgumentOverride> overrides() const;

 private:
  struct Entry {
    std::string key;
    bool list = false;
    bool bare_is_true = false;  // given without a value: true, as HfArgumentParser's bool flags
  };
  std::map<const CLI::Option*, Entry> entries_;
  const CLI::Option* set_ = nullptr;
  const CLI::App* cmd_;
};

}  // namespace strata::cli
