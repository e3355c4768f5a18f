#include "data/mlm_masking.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "data/sampler.h"
#include "util/error.h"
#include "util/rng.h"

namespace strata::data {

namespace {

// Draws of one example: three counters per position (chosen?, how, which random token), so a
// token's fate does not depend on its neighbours'.
struct PositionDraws {
  CounterRng rng;
  double unit(uint64_t counter) const { return static_cast<double>(rng.bits(counter) >> 11) * 0x1.0p-53; }
  bool chosen(size_t t, double probability) const { return unit(3 * t) < probability; }

  // 80% mask token, 10% a random token, 10% unchanged, for a chosen position t.
  void corrupt(Encoded& e, size_t t, const MlmOptions& o, std::vector<int32_t>& labels) const {
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
};

bool special(const Encoded& e, size_t t) { return !e.special_mask.empty() && e.special_mask[t]; }

void mask_whole_words(Encoded& e, const MlmOptions& o, const PositionDraws& draws, uint64_t epoch,
                      uint64_t example, std::vector<int32_t>& labels) {
  struct Word {
    size_t begin, size;
  };
  std::vector<Word> words;
  bool in_word = false;
  for (size_t t = 0; t < e.ids.size(); ++t) {
    if (special(e, t)) {
      in_word = false;
      continue;
    }
    const auto id = static_cast<size_t>(e.ids[t]);
    if (in_word && id < o.continues_word.size() && o.continues_word[id])
      ++words.back().size;
    else
      words.push_back({t, 1});
    in_word = true;
  }
  // HF: min(max_predictions=512, max(1, int(round(len(input_tokens) * mlm_probability)))).
  const double want = std::nearbyint(static_cast<double>(e.ids.size()) * o.probability);  // ties to even
  const size_t budget = std::min<size_t>(512, std::max<size_t>(1, static_cast<size_t>(want)));
  size_t covered = 0;
  for (size_t w : permutation(words.size(), o.seed, rng_stream(RngDomain::WordShuffle, epoch, example))) {
    if (covered >= budget) break;
    if (covered + words[w].size > budget) continue;  // would overshoot: HF skips the word
    for (size_t t = words[w].begin; t < words[w].begin + words[w].size; ++t) draws.corrupt(e, t, o, labels);
    covered += words[w].size;
  }
}

}  // namespace

std::vector<int32_t> mask_tokens(Encoded& e, const MlmOptions& o, uint64_t epoch, uint64_t example) {
  const PositionDraws draws{CounterRng(o.seed, rng_stream(RngDomain::Masking, epoch, example))};
  std::vector<int32_t> labels(e.ids.size(), -100);
  if (!o.continues_word.empty()) {
    mask_whole_words(e, o, draws, epoch, example, labels);
    return labels;
  }
  for (size_t t = 0; t < e.ids.size(); ++t)
    if (!special(e, t) && draws.chosen(t, o.probability)) draws.corrupt(e, t, o, labels);
  return labels;
}

std::vector<uint8_t> word_continuation_table(const TextEncoder& encoder) {
  constexpr std::string_view kContinuation = "##", kByteLevelSpace = "\xC4\xA0" /* Ġ */,
                             kMetaspace = "\xE2\x96\x81" /* ▁ */;
  const size_t vocab = encoder.vocab_size();
  std::vector<std::string> spelling(vocab);
  size_t known = 0, continuation = 0, byte_level = 0, metaspace = 0;
  for (size_t id = 0; id < vocab; ++id) {
    auto t = encoder.id_to_token(static_cast<int32_t>(id));
    if (!t) continue;
    ++known;
    continuation += t->starts_with(kContinuation);
    byte_level += t->starts_with(kByteLevelSpace);
    metaspace += t->starts_with(kMetaspace);
    spelling[id] = std::move(*t);
  }
  if (known == 0)
    fail("whole_word_mask: the tokenizer gives no token spellings, so its words cannot be told apart");
  std::vector<uint8_t> table(vocab, 0);
  const size_t most = std::max({continuation, byte_level, metaspace});
  if (most == 0) return table;  // no marker: every token is a word
  if (continuation == most) {
    for (size_t id = 0; id < vocab; ++id) table[id] = spelling[id].starts_with(kContinuation);
    return table;
  }
  const std::string_view start = byte_level == most ? kByteLevelSpace : kMetaspace;
  for (size_t id = 0; id < vocab; ++id) table[id] = !spelling[id].empty() && !spelling[id].starts_with(start);
  return table;
}

}  // namespace strata::data
