// Shared by the model test files (test_models, test_gpt2, test_albert): weights moved off
// HF's init, and generated batches in one layout.
#pragma once
#include <cstdint>
#include <functional>
#include <random>

#include "core/batch.h"
#include "models/config.h"
#include "models/model.h"

namespace strata::test {

// A uniform draw from [lo, hi).
inline int uniform_int(std::mt19937_64& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi - 1)(rng);
}

// HF's init from `seed`, then every parameter moved off it by up to 0.05 (LayerNorm gains 1,
// biases 0, zero padding rows), so no gradient vanishes or is symmetric by construction.
template <typename T>
void init_perturbed(Model<T>& m, uint64_t seed) {
  m.init_weights(seed);
  std::mt19937_64 rng(seed + 1);
  std::uniform_real_distribution<double> u(-0.05, 0.05);
  for (size_t i = 0; i < m.table().total(); ++i) m.params()[i] += static_cast<T>(u(rng));
}

// Adds the labels of one position (t, real or padding, token id) or of one row (r, its real length).
using PositionLabels = std::function<void(Batch& b, int t, bool real, int id)>;
using RowLabels = std::function<void(Batch& b, int r, int len)>;

// B rows of T tokens; odd rows end in padding (mask 0, pad id) for their last third; where the
// model has token types, the second half of each row's real tokens is type 1. Real tokens never
// use the pad id: nn.Embedding(padding_idx) deliberately drops that row's gradient, which finite
// differences would not. The task's labels come from `position` after each token's id and from
// `row` after each row, drawing from `rng` in that order (a test's batches are fixed by its seeds).
inline Batch padded_batch(const ModelConfig& c, int B, int T, std::mt19937_64& rng, const PositionLabels& position,
                          const RowLabels& row = {}) {
  Batch b;
  b.B = B;
  b.T = T;
  for (int r = 0; r < B; ++r) {
    const int len = r % 2 ? T - T / 3 : T;
    for (int t = 0; t < T; ++t) {
      const bool real = t < len;
      int id = uniform_int(rng, 0, c.vocab_size - 1);
      if (id >= c.pad_token_id) ++id;  // any id but the pad id
      b.input_ids.push_back(real ? id : c.pad_token_id);
      b.attention_mask.push_back(real);
      b.token_type_ids.push_back(c.type_vocab_size > 1 && real && t >= len / 2);
      position(b, t, real, id);
    }
    if (row) row(b, r, len);
  }
  return b;
}

}  // namespace strata::test
