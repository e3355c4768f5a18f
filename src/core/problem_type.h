// How a sequence-classification model turns logits into a loss (HF's config.problem_type).
// Shared by the data side (labels decide it) and the models (the loss follows it).
#pragma once

namespace strata {

enum class ProblemType { Unset, SingleLabel, MultiLabel, Regression };

}  // namespace strata
