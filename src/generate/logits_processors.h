// HF's logits processors that strata implements, applied in the order of HF's
// _get_logits_processor: RepetitionPenaltyLogitsProcessor, NoRepeatNGramLogitsProcessor,
// MinLengthLogitsProcessor / MinNewTokensLengthLogitsProcessor, ForcedBOSTokenLogitsProcessor,
// ForcedEOSTokenLogitsProcessor. They change one row of next-token scores given that row's
// whole sequence so far (prompt and generated tokens, as HF passes input_ids; for an
// encoder-decoder, the decoder start token and generated tokens): the raw logits for greedy
// search and sampling (before the warpers), the log-softmax for beam search.
//
// The length rules compare the sequence's length, HF's cur_len = input_ids.shape[-1], with
// lengths fixed when a generation starts (logits_processors_for resolves them from the config,
// the prompt and the budget): a decoder-only model's prompt counts, and so does an
// encoder-decoder's start token.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "generate/generation_config.h"

namespace strata::gen {

struct LogitsProcessors {
  double repetition_penalty = 1.0;  // != 1: every token of the sequence, once: s < 0 ? s * p : s / p
  int no_repeat_ngram_size = 0;     // > 0: tokens that would complete an n-gram already in the sequence get -inf
  int min_length = 0;               // while the sequence is shorter, eos_token_ids get -inf
  std::vector<int32_t> eos_token_ids;
  // A sequence of one token (HF: cur_len == 1) may only continue with this token: every other
  // score becomes -inf and its own 0. For an encoder-decoder, the first generated token.
  std::optional<int32_t> forced_bos_token_id;
  // A sequence of max_length - 1 tokens, whose next token is the last max_length allows, may
  // only continue with one of these (scores -inf, these 0). Applied after forced_bos, so it
  // wins when both apply.
  std::vector<int32_t> forced_eos_token_ids;
  int max_length = 0;  // prompt + new-token budget
  bool active() const {
    return repetition_penalty != 1.0 || no_repeat_ngram_size > 0 || (min_length > 0 && !eos_token_ids.empty()) ||
           forced_bos_token_id || !forced_eos_token_ids.empty();
  }
};

// g's processors for a generation of at most `max_new_tokens` after a prompt (or decoder start
// token) of `prompt_len` tokens: min_length is g.min_sequence_length(prompt_len) and max_length
// prompt_len + max_new_tokens, as HF's _prepare_generated_length sets them. Checks the forced
// ids against the vocabulary (GenerationConfig::check_forced_ids).
LogitsProcessors logits_processors_for(const GenerationConfig& g, int prompt_len, int max_new_tokens, int vocab_size);

// The tokens that would repeat an n-gram of `ids` if appended: the last token of every n-gram
// of `ids` whose first n-1 tokens are `ids`' last n-1 (for n = 1, every token of `ids`).
// Empty while `ids` is shorter than n.
std::vector<int32_t> banned_ngram_tokens(const std::vector<int32_t>& ids, int n);

// Applies p to scores[V] in place, for a row whose sequence so far is `ids` (ids and forced ids < V). The
// penalty is multiplied or divided in the scores' own type (HF: float32 with float32(p)). Eos
// ids outside the vocabulary ban nothing (HF's isin mask).
template <typename S>
void apply_logits_processors(const LogitsProcessors& p, const std::vector<int32_t>& ids, S* scores, int V);

}  // namespace strata::gen
