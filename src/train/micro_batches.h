// Cutting a batch into micro-batches by rows (SageMaker's `microbatches`): part j of n takes
// rows [j*B/n, (j+1)*B/n) (as even as the rows allow: a short last batch of an epoch may not
// divide), every per-row field sliced alike. Rows keep their order, so the micro-batches
// together are the batch.
#pragma once
#include <vector>

#include "core/batch.h"

namespace strata {

std::vector<Batch> split_rows(const Batch& b, int parts);

}  // namespace strata
