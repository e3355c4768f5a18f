// The BERT family's entries in the architecture registry.
#pragma once
#include "models/architecture.h"

namespace strata {

extern const Architecture kBertArchitecture;
extern const Architecture kRobertaArchitecture;
extern const Architecture kDistilBertArchitecture;

}  // namespace strata
