// What `strata generate` does with a causal LM: HF GenerationConfig's names and meanings for
// the fields strata implements (greedy search and multinomial sampling, num_beams == 1).
// Defaults come from the model directory's generation_config.json, as from_pretrained reads
// them (or, without one, config.json's token ids, as HF's GenerationConfig.from_model_config);
// the command line overrides them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::gen {

struct GenerationConfig {
  // Length: max_new_tokens wins over max_length (prompt + new tokens), as in HF. With neither,
  // strata generates 50 new tokens (HF's max_length default of 20 counts the prompt too).
  std::optional<int> max_new_tokens, max_length;
  bool do_sample = false;
  double temperature = 1.0;
  int top_k = 50;  // 0: off
  double top_p = 1.0;
  int num_return_sequences = 1;
  std::vector<int32_t> eos_token_ids;  // a generated eos id ends its sequence (and is kept)
  int32_t bos_token_id = -1;           // starts an empty prompt; -1: none
  bool use_cache = true;               // false: recompute the prefix at every step
  uint64_t seed = 42;                  // strata's own: the sampling stream (HF uses torch's global RNG)

  static constexpr int kDefaultMaxNewTokens = 50;
  // New tokens allowed after a prompt of `prompt_len` tokens (may be <= 0 with max_length).
  int new_token_budget(int prompt_len) const;
  // HF's GenerationConfig.validate rules for these fields; `where` starts each message.
  void validate(const std::string& where) const;
};

// DIR/generation_config.json if present, else the token ids of DIR/config.json. Fields strata
// does not implement (num_beams, repetition_penalty, ...) are listed in `ignored` when their
// value is not HF's default, so the caller can say so.
GenerationConfig load_generation_config(const std::string& model_dir, std::vector<std::string>* ignored);

}  // namespace strata::gen
