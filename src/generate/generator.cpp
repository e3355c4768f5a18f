#include "generate/generator.h"

#include <algorithm>

#include "generate/beam_search.h"
#include "generate/logits_processors.h"
#include "generate/sampling.h"
#include "util/error.h"
#include "util/rng.h"

namespace strata::gen {

const char* finish_reason_name(FinishReason r) { return r == FinishReason::EosToken ? "eos_token" : "length"; }

template <typename T>
std::vector<Generated> generate(CausalDecoder<T>& decoder, const std::vector<int32_t>& prompt,
                                const GenerationConfig& g, int vocab_size, int max_positions, uint64_t prompt_index) {
  const int P = static_cast<int>(prompt.size()), B = g.num_return_sequences, budget = g.new_token_budget(P);
  STRATA_CHECK(P > 0, "generate: the prompt is empty");
  STRATA_CHECK(budget > 0, "generate: a prompt of ", P, " tokens leaves no room under max_length ",
               g.max_length.value_or(0), "; set max_new_tokens");
  STRATA_CHECK(P + budget <= max_positions, "generate: a prompt of ", P, " tokens plus ", budget,
               " new tokens exceeds the model's ", max_positions, " positions");
  if (g.num_beams > 1) return beam_search(decoder, prompt, g, vocab_size, budget);
  // Sequence j of this prompt draws its step-s uniform at counter j * 2^32 + s of this stream.
  const CounterRng rng(g.seed, prompt_index);
  const Warpers warpers{g.temperature, g.top_k, g.top_p};
  const LogitsProcessors processors = logits_processors_for(g, P, budget, vocab_size);

  std::vector<Generated> out(static_cast<size_t>(B), Generated{{}, FinishReason::Length, std::nullopt});
  std::vector<std::vector<int32_t>> sequence(static_cast<size_t>(B), prompt);  // what the processors read
  std::vector<int32_t> feed;
  for (int b = 0; b < B; ++b) feed.insert(feed.end(), prompt.begin(), prompt.end());
  decoder.reset(B, P + budget);
  const T* logits = decoder.append(feed.data(), P);
  std::vector<double> scores(static_cast<size_t>(vocab_size));
  std::vector<bool> done(static_cast<size_t>(B), false);
  for (int step = 0; step < budget; ++step) {
    feed.assign(static_cast<size_t>(B), 0);
    for (int b = 0; b < B; ++b) {
      Generated& seq = out[b];
      if (done[b]) {
        feed[b] = seq.ids.back();  // a finished row is still fed (its output is never read)
        continue;
      }
      std::copy_n(logits + static_cast<size_t>(b) * vocab_size, vocab_size, scores.begin());
      if (processors.active()) apply_logits_processors(processors, sequence[b], scores.data(), vocab_size);
      int32_t next;
      if (g.do_sample) {
        apply_warpers(scores, warpers);
        next = sample_index(scores, rng.uniform53((static_cast<uint64_t>(b) << 32) + static_cast<uint64_t>(step)));
      } else {
        next = argmax(scores.data(), vocab_size);
      }
      seq.ids.push_back(next);
      sequence[b].push_back(next);
      feed[b] = next;
      if (std::find(g.eos_token_ids.begin(), g.eos_token_ids.end(), next) != g.eos_token_ids.end()) {
        seq.finish = FinishReason::EosToken;
        done[b] = true;
      }
    }
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; }) || step + 1 == budget) break;
    logits = decoder.append(feed.data(), 1);
  }
  return out;
}

template std::vector<Generated> generate(CausalDecoder<float>&, const std::vector<int32_t>&, const GenerationConfig&,
                                        int, int, uint64_t);
template std::vector<Generated> generate(CausalDecoder<double>&, const std::vector<int32_t>&, const GenerationConfig&,
                                         int, int, uint64_t);

}  // namespace strata::gen
