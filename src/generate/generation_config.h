// What `strata generate` does with a causal LM or an encoder-decoder: HF GenerationConfig's names
// and meanings for the fields strata implements (greedy search, multinomial sampling, beam search,
// and the logits processors of generate/logits_processors.h).
// Defaults come from the model directory's generation_config.json, as from_pretrained reads
// them (or, without one, config.json's generation fields, as HF reads a legacy config.json);
// the command line overrides them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::gen {

// HF's early_stopping: when beam search may stop before max_new_tokens (the exact rules are in
// generate/beam_search.h).
enum class EarlyStopping {
  Heuristic,         // false, HF's default: once the best running beam, scored at its current length,
                     // cannot beat the worst of num_beams finished hypotheses
  OnceNumBeamsDone,  // true: as soon as num_beams hypotheses are finished (or as with false)
  Never,             // "never": as false, but with length_penalty > 0 the best beam is scored at the
                     // maximum length (the canonical beam search's bound)
};
// "true" | "false" | "never"; anything else is an error naming `where`.
EarlyStopping parse_early_stopping(const std::string& text, const std::string& where);

struct GenerationConfig {
  // Length: max_new_tokens wins over max_length (prompt + new tokens), as in HF. With neither,
  // strata generates 50 new tokens (HF's max_length default of 20 counts the prompt too).
  std::optional<int> max_new_tokens, max_length;
  bool do_sample = false;
  double temperature = 1.0;
  int top_k = 50;  // 0: off
  double top_p = 1.0;
  int num_return_sequences = 1;  // <= num_beams with beam search: its best hypotheses, best first
  int num_beams = 1;             // > 1: beam search (generate/beam_search.h)
  double length_penalty = 1.0;   // beam search: a hypothesis scores sum of log-probs / new_tokens^length_penalty
  EarlyStopping early_stopping = EarlyStopping::Heuristic;
  int no_repeat_ngram_size = 0;     // > 0: no n-gram of this size occurs twice (generate/logits_processors.h)
  double repetition_penalty = 1.0;  // != 1: scores of tokens already in the sequence are penalized
  // Lengths below count the whole sequence, as HF's do: the prompt, or an encoder-decoder's
  // decoder start token, included.
  int min_length = 0;                 // eos ids are banned while the sequence is shorter
  std::optional<int> min_new_tokens;  // wins over min_length: no eos among this many new tokens
  std::optional<int32_t> forced_bos_token_id;  // the only choice after a one-token sequence
                                               // (an encoder-decoder's first new token)
  std::vector<int32_t> forced_eos_token_ids;   // the only choices for the last token max length allows
  std::vector<int32_t> eos_token_ids;  // a generated eos id ends its sequence (and is kept)
  int32_t bos_token_id = -1;           // starts an empty prompt; -1: none
  bool use_cache = true;               // false: recompute the prefix at every step
  uint64_t seed = 42;                  // strata's own: the sampling stream (HF uses torch's global RNG)

  static constexpr int kDefaultMaxNewTokens = 50;
  // New tokens allowed after a prompt of `prompt_len` tokens (may be <= 0 with max_length).
  int new_token_budget(int prompt_len) const;
  // The sequence length below which eos is banned, after a prompt of `prompt_len` tokens (HF's
  // _prepare_generated_length: min_new_tokens + prompt when set, else min_length).
  int min_sequence_length(int prompt_len) const;
  // HF's GenerationConfig.validate rules for these fields; `where` starts each message.
  void validate(const std::string& where) const;
  // The forced token ids are tokens of a vocabulary of `vocab_size` (HF fails with an
  // IndexError at the step that forces one that is not).
  void check_forced_ids(int vocab_size, const std::string& where) const;
};

// DIR/generation_config.json if present, else the generation fields of DIR/config.json (as HF
// reads a legacy config.json: its token ids, BART's forced_eos_token_id, ...). Fields strata
// does not implement (num_beam_groups, typical_p, ...) are listed in `ignored` when their value
// is not HF's default, so the caller can say so.
GenerationConfig load_generation_config(const std::string& model_dir, std::vector<std::string>* ignored);

}  // namespace strata::gen
