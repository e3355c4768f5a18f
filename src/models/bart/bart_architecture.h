// model_type bart: its config.json fields (BartConfig names and defaults) and class names.
#pragma once
#include "models/architecture.h"

namespace strata {
extern const Architecture kBartArchitecture;
}
