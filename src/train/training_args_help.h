// The one-line help of each TrainingArguments option (training_args_help.cpp).
#pragma once
#include <string_view>

namespace strata {

// The help line of option `name`, or null when it has none.
const char* training_option_help(std::string_view name);

}  // namespace strata
