// Encoder-decoder generate() parity with HF over a fixture of cases, shared by
// test_bart_generate.cpp and test_t5_generate.cpp. A fixture (tests/fixtures/NAME.generate.json,
// gzipped or not; made by make_fixtures_bart_generate.sh / make_fixtures_t5_generate.sh) holds
// per case the settings passed to HF's generate(), the source ids, HF's new tokens and, for beam
// search, its sequences_scores.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/file_bytes.h"
#include "generate/generator.h"
#include "kernels/ops.h"
#include "models/causal_decoder.h"
#include "models/pretrained.h"
#include "test_util_fs.h"

namespace strata::test {

inline nlohmann::json read_json_fixture(const std::string& name) {
  const data::FileBytes f(fixture(name));
  return nlohmann::json::parse(f.bytes());
}

// The model directory's generation config with the case's settings, as the scripts pass them
// to generate().
inline gen::GenerationConfig generation_case_config(const std::string& model_dir, const nlohmann::json& c) {
  using ids = std::vector<int32_t>;
  std::vector<std::string> ignored;
  gen::GenerationConfig g = gen::load_generation_config(model_dir, &ignored);
  EXPECT_TRUE(ignored.empty());
  g.max_length = c["max_length"].get<int>();  // counts the decoder start token, as HF's does
  g.num_beams = c["num_beams"].get<int>();
  if (g.num_beams > 1) {
    g.length_penalty = c["length_penalty"].get<double>();
    const nlohmann::json& es = c["early_stopping"];
    g.early_stopping = es.is_string() ? gen::EarlyStopping::Never
                       : es.get<bool>() ? gen::EarlyStopping::OnceNumBeamsDone
                                        : gen::EarlyStopping::Heuristic;
    g.num_return_sequences = c["num_return_sequences"].get<int>();
  }
  g.no_repeat_ngram_size = c["no_repeat_ngram_size"].get<int>();
  g.repetition_penalty = c["repetition_penalty"].get<double>();
  g.min_length = c["min_length"].get<int>();
  if (!c["min_new_tokens"].is_null()) g.min_new_tokens = c["min_new_tokens"].get<int>();
  if (!c["forced_bos_token_id"].is_null()) g.forced_bos_token_id = c["forced_bos_token_id"].get<int32_t>();
  g.forced_eos_token_ids = c["forced_eos_token_id"].is_null() ? ids{} : ids{c["forced_eos_token_id"].get<int32_t>()};
  g.eos_token_ids = {c["eos_token_id"].get<int32_t>()};
  g.validate("");
  return g;
}

// How a run's beam scores compare with HF's.
struct ScoreAgreement {
  double worst = 0;  // largest |strata - HF|
  int equal = 0, total = 0;
};

// Every case of `doc` on the fixture model `model`: the same new tokens as HF, and beam search's
// sequences_scores within `rel_tol` of their size. One thread, as in test_beam_search.cpp (the
// products are tiny).
template <typename T>
ScoreAgreement expect_hf_generate_cases(const std::string& model, const nlohmann::json& doc, bool use_cache,
                                        double rel_tol) {
  using ids = std::vector<int32_t>;
  const int threads = kernels::num_threads();
  kernels::set_num_threads(1);
  const auto m = load_pretrained<T>(fixture(model));
  const ModelConfig& cfg = m->config();
  const ids start = {doc["decoder_start_token_id"].get<int32_t>()};
  EXPECT_EQ(start[0], cfg.raw["decoder_start_token_id"].get<int32_t>());
  ScoreAgreement a;
  uint64_t index = 0;
  for (const nlohmann::json& c : doc["cases"]) {
    SCOPED_TRACE(c.dump().substr(0, 300));
    const gen::GenerationConfig g = generation_case_config(fixture(model), c);
    const auto decoder = make_seq2seq_decoder(*m, c["source"].get<ids>(), use_cache);
    const auto out = gen::generate(*decoder, start, g, cfg.vocab_size, cfg.max_position_embeddings, index++);
    const nlohmann::json& want = c["sequences"];
    EXPECT_EQ(out.size(), want.size());
    for (size_t i = 0; i < std::min(out.size(), want.size()); ++i) {
      EXPECT_EQ(out[i].ids, want[i].get<ids>()) << "sequence " << i;
      if (g.num_beams == 1) continue;
      const double hf = c["sequences_scores"][i].get<double>(), diff = std::abs(double(*out[i].score) - hf);
      a.worst = std::max(a.worst, diff);
      a.equal += diff == 0;
      ++a.total;
      EXPECT_LE(diff, rel_tol * std::max(1.0, std::abs(hf)))
          << "sequence " << i << ": " << *out[i].score << " vs " << hf;
    }
  }
  kernels::set_num_threads(threads);
  return a;
}

inline void print_score_agreement(const char* what, const ScoreAgreement& a) {
  std::printf("%s: %d of %d sequences_scores bit-equal, largest difference %.3g\n", what, a.equal, a.total, a.worst);
}

}  // namespace strata::test
