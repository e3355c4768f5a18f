// ALBERT's entry in the architecture registry.
#pragma once
#include "models/architecture.h"

namespace strata {

extern const Architecture kAlbertArchitecture;

}  // namespace strata
