// strata.TrainingArguments's keywords, (name, value as JSON) pairs, as the TrainingArguments
// a config file with those options gives; strata::Error names the keyword that is wrong.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "train/training_args.h"

namespace strata::python {

TrainingArguments parse_arguments(const std::vector<std::pair<std::string, std::string>>& options);

}  // namespace strata::python
