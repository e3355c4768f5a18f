// Beam search as HF transformers' generate() runs it (GenerationMixin._beam_search and its
// helpers, transformers 5.24), for one prompt over any CausalDecoder: a decoder-only model's
// prompt, or an encoder-decoder's decoder start token(s) with the encoder state in the decoder.
//
// Note [HF's beam search, step by step]. K = num_beams running beams start as K copies of the
// prompt, scored 0 for the first and -1e9 for the others (so the first step expands one). Then,
// at each step:
//  1. Each beam's next-token log-probabilities: log_softmax in float32, then the logits
//     processors (generate/logits_processors.h), plus the beam's score: K * V candidates.
//  2. The best W = max(2, 1 + number of eos ids) * K candidates, best first (ties: lower beam,
//     then lower id). W leaves K that do not end in eos whatever the K best do.
//  3. A candidate finishes when its token is an eos id or it reaches max_new_tokens. Each of the
//     K best candidates that finishes becomes a hypothesis scored
//         score / new_tokens ^ length_penalty
//     and joins the K best hypotheses so far (one ranked K..W-1 is dropped, as HF's
//     top_num_beam_mask drops it). The K best candidates that do not finish are the next
//     running beams, best first; the decoder's rows are reordered to their source beams.
//  4. The search stops when every candidate finished (max_new_tokens), or, with K hypotheses
//     kept, when early_stopping is true, or when the best running beam's score / L ^
//     length_penalty is not above the worst hypothesis kept. L is the new tokens so far, or
//     max_new_tokens with early_stopping "never" and length_penalty > 0 (the bound of the
//     canonical beam search, reached only if no longer hypothesis can win).
// The result is the num_return_sequences best hypotheses, best first, each with its score (HF's
// sequences_scores). new_tokens and L count tokens after `prompt`: HF divides by
// cur_len + 1 - decoder_prompt_len, which since transformers 4.36 (PR #27351) leaves out a
// decoder-only model's prompt and an encoder-decoder's decoder start token alike, so one rule
// serves both (before, both counted the whole decoder sequence).
//
// Scores are float32 as in HF, whatever the model's dtype: HF casts the logits to float32 and
// keeps every score in float32, and strata adds, divides and compares in the same type (the
// -1e9 above included). The log_softmax alone runs in double and rounds once, so it does not
// depend on a summation order: it is within an ulp or two of torch's, which does depend on
// its vector width. HF also masks hypotheses out of a batch item that is already done; with one
// prompt per search such an item has ended the loop, so the masks never apply here.
#pragma once
#include <cstdint>
#include <vector>

#include "generate/generation_config.h"
#include "generate/generator.h"
#include "models/causal_decoder.h"

namespace strata::gen {

// Resets `decoder` to g.num_beams rows of `prompt` (capacity prompt + max_new_tokens) and runs
// the search with g's num_beams (> 1), length_penalty, early_stopping, num_return_sequences,
// eos_token_ids and logits processors. Each result's ids are its new tokens (ending with the
// eos id when finish == EosToken) and its score is set.
template <typename T>
std::vector<Generated> beam_search(CausalDecoder<T>& decoder, const std::vector<int32_t>& prompt,
                                   const GenerationConfig& g, int vocab_size, int max_new_tokens);

// out[v] = log_softmax(float(logits))[v] for v < V: the logits rounded to float32 (as HF's
// .to(float32)), the result computed in double and rounded to float32 once.
template <typename T>
void log_softmax_f32(const T* logits, int V, float* out);

}  // namespace strata::gen
