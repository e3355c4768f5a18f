#include "data/mlm_masking.h"

#include "data/sampler.h"
#include "util/rng.h"

namespace strata::data {

std::vector<int32_t> mask_tokens(Encoded& e, const MlmOptions& o, uint64_t epoch, uint64_t example) {
  const CounterRng rng(o.seed, rng_stream(RngDomain::Masking, epoch, example));
  auto unit = [&](uint64_t counter) { return static_cast<double>(rng.bits(counter) >> 11) * 0x1.0p-53; };
  std::vector<int32_t> labels(e.ids.size(), -100);
  for (size_t t = 0; t < e.ids.size(); ++t) {
    if (!e.special_mask.empty() && e.special_mask[t]) continue;
    // Three counters per position, so a token's fate does not depend on its neighbours'.
    if (unit(3 * t) >= o.probability) continue;
    labels[t] = e.ids[t];
    const double how = unit(3 * t + 1);
    if (how < 0.8) {
      e.ids[t] = o.mask_id;
    } else if (how < 0.9) {
      // Multiply-high maps 64 random bits onto [0, vocab); its bias is below vocab / 2^64.
      const unsigned __int128 m = static_cast<unsigned __int128>(rng.bits(3 * t + 2)) * o.vocab_size;
      e.ids[t] = static_cast<int32_t>(static_cast<uint64_t>(m >> 64));
    }
  }
  return labels;
}

}  // namespace strata::data
