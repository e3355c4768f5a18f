// GPT-2's entry in the architecture registry.
#pragma once
#include "models/architecture.h"

namespace strata {

extern const Architecture kGpt2Architecture;

}  // namespace strata
