// The decoding loop of `strata generate`: feed a prompt to a causal decoder, then choose and
// feed one token at a time (greedy or sampled, generate/sampling.h, after the logits
// processors, generate/logits_processors.h) until every sequence has produced an eos id or its
// budget of new tokens; with num_beams > 1, beam search (generate/beam_search.h) instead.
// Works on token ids; the CLI tokenizes.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "generate/generation_config.h"
#include "models/causal_decoder.h"

namespace strata::gen {

enum class FinishReason { EosToken, Length };
const char* finish_reason_name(FinishReason r);  // "eos_token" | "length"

struct Generated {
  std::vector<int32_t> ids;  // new tokens only; ends with the eos id when finish == EosToken
  FinishReason finish;
  std::optional<float> score;  // beam search only: the hypothesis' score (HF's sequences_scores)
};

// g.num_return_sequences continuations of `prompt` (non-empty): sampled or greedy ones decoded
// together as rows of one batch, or beam search's best hypotheses, best first. Sampling draws
// are keyed by (g.seed, prompt_index, sequence, step), so a result does not depend on the other
// prompts, nor on how many sequences are asked for. Errors when prompt + budget exceeds
// max_positions.
template <typename T>
std::vector<Generated> generate(CausalDecoder<T>& decoder, const std::vector<int32_t>& prompt,
                                const GenerationConfig& g, int vocab_size, int max_positions, uint64_t prompt_index);

}  // namespace strata::gen
