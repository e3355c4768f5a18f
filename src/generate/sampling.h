// Choosing the next token from one row of logits, as HF's generate() does: greedy search takes
// the argmax; sampling runs HF's logits warpers in HF's order (temperature, top-k, top-p) and
// draws from the softmax of what is left. The draw takes its uniform number from the caller,
// so a run is a pure function of the seed (generate/generator.h).
#pragma once
#include <cstdint>
#include <vector>

namespace strata::gen {

// Index of the largest logit; ties go to the lowest index (torch.argmax).
template <typename T>
int32_t argmax(const T* logits, int V);

struct Warpers {
  double temperature = 1.0;  // scores / temperature when != 1 (TemperatureLogitsWarper)
  int top_k = 0;             // keep scores >= the k-th largest when > 0 (TopKLogitsWarper)
  double top_p = 1.0;        // nucleus when < 1 (TopPLogitsWarper, min_tokens_to_keep 1)
};

// Applies the warpers to scores[V] in place; removed entries become -inf.
// top-k keeps every score equal to the k-th largest (HF compares with `<`). top-p sorts the
// scores ascending (ties by index), removes each whose cumulative probability from the
// bottom is <= 1 - top_p, and always keeps the largest.
void apply_warpers(std::vector<double>& scores, const Warpers& w);

// The index whose interval of the softmax CDF (in index order) holds u in [0, 1). Entries at
// -inf have probability 0 and are never chosen.
int32_t sample_index(const std::vector<double>& scores, double u);

}  // namespace strata::gen
