// Masked-LM corruption as HF's DataCollatorForLanguageModeling: every non-special token is
// chosen with probability mlm_probability; a chosen token becomes [MASK] (80%), a random
// vocabulary token (10%) or stays (10%); labels hold the original id at chosen positions and
// -100 elsewhere. The draws are counter-based, a pure function of (seed, epoch, example,
// position): the same masks whatever the worker count, batch composition or resume point.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/text_encoder.h"

namespace strata::data {

struct MlmOptions {
  double probability = 0.15;
  uint64_t seed = 42;
  int32_t mask_id = 0;
  size_t vocab_size = 0;  // random replacements are drawn from [0, vocab_size), as HF does
};

// Corrupts e in place; returns its labels. `example` is the dataset index of e.
std::vector<int32_t> mask_tokens(Encoded& e, const MlmOptions& opts, uint64_t epoch, uint64_t example);

}  // namespace strata::data
