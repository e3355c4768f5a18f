// Builds the model a config describes, through the architecture registered for its
// model_type (models/architecture.h).
#pragma once
#include <memory>

#include "models/architecture.h"
#include "models/model.h"

namespace strata {

template <typename T>
std::unique_ptr<Model<T>> make_model(const ModelConfig& c);

}  // namespace strata
