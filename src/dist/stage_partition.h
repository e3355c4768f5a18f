// Splitting a sequence of layers into pipeline stages (pure arithmetic, no MPI or models):
// each stage takes a contiguous run of at least one layer, the first stage also carries a
// fixed cost before the layers (the embeddings) and the last one after them (the head).
#pragma once
#include <vector>

namespace strata::dist {

// The layers per stage that minimise the largest stage cost (first_extra + its layers' costs
// for stage 0, its layers' costs + last_extra for the last stage). Among equally good splits,
// the one that gives earlier stages more layers. Needs 1 <= stages <= costs.size().
std::vector<int> balance_stages(const std::vector<double>& layer_costs, int stages, double first_extra,
                                double last_extra);

// Layers as evenly as possible: the first (layers % stages) stages take one more.
std::vector<int> even_stages(int layers, int stages);

}  // namespace strata::dist
