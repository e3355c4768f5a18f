// model_type t5: its config.json fields (T5Config names and defaults) and class names.
#pragma once
#include "models/architecture.h"

namespace strata {
extern const Architecture kT5Architecture;
}
