// Generation: GPT-2's key/value-cache decoder against Model::infer over the whole prefix (the
// slow, obviously-correct path), also after beam search's row reorders, greedy decoding against HF's GPT2LMHeadModel.generate on the
// tiny fixture (tests/fixtures/gpt2-causal-lm.generate.json, made by make_generate_fixture.py),
// and the decoding loop's contract: eos, budgets, positions, seeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generate/generator.h"
#include "generate/sampling.h"
#include "models/causal_decoder.h"
#include "models/config.h"
#include "models/gpt2/gpt2_decoder.h"
#include "models/gpt2/gpt2_model.h"
#include "models/pretrained.h"
#include "test_util_fs.h"
#include "util/error.h"

namespace strata {
namespace {

using nlohmann::json;

const std::string kFixtureModel = test::fixture("gpt2-causal-lm");

// A tiny GPT-2 LM far from linear (initializer_range 0.2), with n_positions 12.
ModelConfig tiny_lm(bool scale_attn) {
  json j = {{"model_type", "gpt2"}, {"architectures", {"GPT2LMHeadModel"}}, {"vocab_size", 29},
            {"n_positions", 12},    {"n_embd", 8},                          {"n_layer", 3},
            {"n_head", 2},          {"initializer_range", 0.2},             {"scale_attn_weights", scale_attn}};
  return parse_model_config(j, "tiny gpt2 config.json");
}

std::vector<int32_t> random_ids(int n, int vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& id : ids) id = std::uniform_int_distribution<int32_t>(0, vocab - 1)(rng);
  return ids;
}

// Logits of position t of every row from infer() over rows[:, :t+1], [B, V].
template <typename T>
std::vector<T> infer_logits_at(const Model<T>& m, const std::vector<std::vector<int32_t>>& rows, int t) {
  const int V = m.config().vocab_size, B = static_cast<int>(rows.size());
  Batch b;
  b.B = B;
  b.T = t + 1;
  for (const auto& r : rows) b.input_ids.insert(b.input_ids.end(), r.begin(), r.begin() + t + 1);
  b.attention_mask.assign(b.input_ids.size(), 1);
  b.token_type_ids.assign(b.input_ids.size(), 0);
  auto state = m.new_state();
  const T* y = m.infer(b, *state);
  std::vector<T> out;
  for (int r = 0; r < B; ++r) out.insert(out.end(), y + (size_t(r) * b.T + t) * V, y + (size_t(r) * b.T + t + 1) * V);
  return out;
}

// Feeds rows in chunks (first `first` tokens, then `chunk` at a time) and checks every
// returned [B, V] against infer() at the same position, to `tol` of the largest logit.
template <typename T>
void expect_decoder_matches_infer(const Model<T>& m, CausalDecoder<T>& dec, int B, int first, int chunk, double tol,
                                  uint64_t seed) {
  const int Tn = m.config().max_position_embeddings, V = m.config().vocab_size;
  std::vector<std::vector<int32_t>> rows;
  for (int r = 0; r < B; ++r) rows.push_back(random_ids(Tn, V, seed + r));
  dec.reset(B, Tn);
  for (int done = 0; done < Tn;) {
    const int n = std::min(done == 0 ? first : chunk, Tn - done);
    std::vector<int32_t> feed;
    for (const auto& r : rows) feed.insert(feed.end(), r.begin() + done, r.begin() + done + n);
    const T* got = dec.append(feed.data(), n);
    done += n;
    ASSERT_EQ(dec.length(), done);
    const std::vector<T> want = infer_logits_at(m, rows, done - 1);
    double scale = 0, diff = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      scale = std::max(scale, std::abs(double(want[i])));
      diff = std::max(diff, std::abs(double(got[i]) - double(want[i])));
    }
    EXPECT_LE(diff, tol * scale) << "position " << done - 1 << " (fed " << n << " tokens)";
  }
}

TEST(Gpt2Decoder, CachedLogitsEqualInferAtEveryPositionFp64) {
  for (bool scale_attn : {true, false}) {
    SCOPED_TRACE(scale_attn ? "scale_attn_weights" : "unscaled scores");
    Gpt2Model<double> m(tiny_lm(scale_attn));
    m.init_weights(3);
    const auto dec = make_causal_decoder(m, /*use_cache=*/true);
    ASSERT_NE(dynamic_cast<Gpt2Decoder<double>*>(dec.get()), nullptr);
    expect_decoder_matches_infer(m, *dec, 1, 1, 1, 1e-12, 10);  // one token at a time
    expect_decoder_matches_infer(m, *dec, 3, 5, 1, 1e-12, 20);  // a prompt, then single tokens (reset reused)
    expect_decoder_matches_infer(m, *dec, 2, 4, 3, 1e-12, 30);  // chunks of several new positions
  }
}

TEST(Gpt2Decoder, CachedLogitsEqualInferOnTheHfFixtureFp32) {
  const auto m = load_pretrained<float>(kFixtureModel);
  const auto dec = make_causal_decoder(*m, true);
  expect_decoder_matches_infer(*m, *dec, 2, 7, 1, 2e-6, 40);
}

TEST(Gpt2Decoder, RecomputeDecoderIsInferOfThePrefix) {
  Gpt2Model<double> m(tiny_lm(true));
  m.init_weights(4);
  const auto dec = make_causal_decoder(m, /*use_cache=*/false);
  EXPECT_EQ(dynamic_cast<Gpt2Decoder<double>*>(dec.get()), nullptr);
  expect_decoder_matches_infer(m, *dec, 2, 3, 2, 0.0, 50);
}

// After a reorder, row i continues old row rows[i]: its next logits equal infer() over that
// row's tokens plus a new one. Rows repeat and move, as beam search makes them.
template <typename T>
void expect_reorder_matches_infer(const Model<T>& m, CausalDecoder<T>& dec, double tol) {
  const int V = m.config().vocab_size, B = 3, prompt = 4;
  std::vector<std::vector<int32_t>> rows;
  for (int r = 0; r < B; ++r) rows.push_back(random_ids(prompt, V, 60 + r));
  dec.reset(B, prompt + 2);
  std::vector<int32_t> feed;
  for (const auto& r : rows) feed.insert(feed.end(), r.begin(), r.end());
  dec.append(feed.data(), prompt);
  const std::vector<std::vector<int32_t>> orders = {{2, 0, 0}, {1, 2, 0}};
  for (size_t step = 0; step < orders.size(); ++step) {
    dec.reorder(orders[step]);
    EXPECT_EQ(dec.length(), prompt + static_cast<int>(step));
    std::vector<std::vector<int32_t>> moved;
    for (int32_t r : orders[step]) moved.push_back(rows[r]);
    rows = moved;
    feed = random_ids(B, V, 70 + step);  // a new token per row, different for rows that share a source
    for (int b = 0; b < B; ++b) rows[b].push_back(feed[b]);
    const T* got = dec.append(feed.data(), 1);
    const std::vector<T> want = infer_logits_at(m, rows, prompt + static_cast<int>(step));
    double scale = 0, diff = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      scale = std::max(scale, std::abs(double(want[i])));
      diff = std::max(diff, std::abs(double(got[i]) - double(want[i])));
    }
    EXPECT_LE(diff, tol * scale) << "after reorder " << step;
  }
  EXPECT_THROW(dec.reorder({0, 1}), Error);     // one source row per row
  EXPECT_THROW(dec.reorder({0, 1, 3}), Error);  // rows are 0..B-1
}

TEST(Gpt2Decoder, ReorderMovesEveryRowsState) {
  Gpt2Model<double> m(tiny_lm(true));
  m.init_weights(6);
  for (bool cache : {true, false}) {
    SCOPED_TRACE(cache ? "kv cache" : "recompute");
    const auto dec = make_causal_decoder(m, cache);
    expect_reorder_matches_infer(m, *dec, cache ? 1e-12 : 0.0);
  }
}

TEST(Gpt2Decoder, OverflowAndOutOfVocabularyIdsAreErrors) {
  Gpt2Model<float> m(tiny_lm(true));
  m.init_weights(5);
  for (bool cache : {true, false}) {
    const auto dec = make_causal_decoder(m, cache);
    EXPECT_THROW(dec->reset(1, 13), Error);  // n_positions is 12
    dec->reset(1, 4);
    const std::vector<int32_t> ids = {1, 2, 3, 4, 5};
    EXPECT_THROW(dec->append(ids.data(), 5), Error);
    const int32_t bad = 29;
    try {
      dec->append(&bad, 1);
      ADD_FAILURE() << "an id outside the vocabulary was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("token id 29 is outside the model's vocabulary (vocab_size 29)"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Gpt2Decoder, NonCausalModelsHaveNoDecoder) {
  json j = {{"model_type", "gpt2"}, {"architectures", {"GPT2ForSequenceClassification"}}, {"vocab_size", 29},
            {"n_positions", 12},    {"n_embd", 8}, {"n_layer", 1}, {"n_head", 2}, {"pad_token_id", 0}};
  Gpt2Model<float> m(parse_model_config(j, "config.json"));
  EXPECT_EQ(m.new_cached_decoder(), nullptr);
  EXPECT_THROW(make_causal_decoder(m, true), Error);
}

// ---- HF parity ----------------------------------------------------------------------------

// Held for the whole run: callers range-for over its members, which over a temporary would
// read freed memory (found by the ASan run: `for (c : generate_fixture()["cases"])`).
const json& generate_fixture() {
  static const json fixture = [] {
    std::ifstream in(test::fixture("gpt2-causal-lm.generate.json"));
    return json::parse(in);
  }();
  return fixture;
}

// Step by step with HF's tokens: strata's logits at HF's five best ids, and its own ranking.
TEST(GenerateHfParity, LogitsOfEveryStepMatchHfTopFive) {
  const auto m = load_pretrained<float>(kFixtureModel);
  const int V = m->config().vocab_size;
  for (bool cache : {true, false}) {
    SCOPED_TRACE(cache ? "kv cache" : "recompute");
    const auto dec = make_causal_decoder(*m, cache);
    for (const json& c : generate_fixture()["cases"]) {
      const auto prompt = c["prompt"].get<std::vector<int32_t>>();
      const auto hf = c["generated"].get<std::vector<int32_t>>();
      dec->reset(1, static_cast<int>(prompt.size() + hf.size()));
      const float* logits = dec->append(prompt.data(), static_cast<int>(prompt.size()));
      for (size_t step = 0; step < hf.size(); ++step) {
        const json& top = c["top_logits"][step];
        std::vector<int32_t> order(static_cast<size_t>(V));
        for (int i = 0; i < V; ++i) order[i] = i;
        std::partial_sort(order.begin(), order.begin() + 5, order.end(),
                          [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
        for (size_t r = 0; r < 5; ++r) {
          const int32_t id = top[r][0].get<int32_t>();
          EXPECT_NEAR(logits[id], top[r][1].get<double>(), 2e-5) << "step " << step << " id " << id;
          EXPECT_EQ(order[r], id) << "step " << step << " rank " << r;
        }
        if (step + 1 < hf.size()) logits = dec->append(&hf[step], 1);
      }
    }
  }
}

TEST(GenerateHfParity, GreedyTokensEqualHfGenerate) {
  const auto m = load_pretrained<float>(kFixtureModel);
  const ModelConfig& cfg = m->config();
  std::vector<std::string> ignored;
  const gen::GenerationConfig from_dir = gen::load_generation_config(kFixtureModel, &ignored);
  EXPECT_TRUE(ignored.empty());
  ASSERT_EQ(from_dir.eos_token_ids, std::vector<int32_t>{511});
  for (bool cache : {true, false}) {
    SCOPED_TRACE(cache ? "kv cache" : "recompute");
    const auto dec = make_causal_decoder(*m, cache);
    uint64_t index = 0;
    for (const json& c : generate_fixture()["cases"]) {
      gen::GenerationConfig g = from_dir;
      g.max_new_tokens = c["max_new_tokens"].get<int>();
      if (c.contains("eos_token_id")) g.eos_token_ids = {c["eos_token_id"].get<int32_t>()};
      const auto prompt = c["prompt"].get<std::vector<int32_t>>();
      const auto out = gen::generate(*dec, prompt, g, cfg.vocab_size, cfg.max_position_embeddings, index++);
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(out[0].ids, c["generated"].get<std::vector<int32_t>>()) << "prompt of " << prompt.size() << " tokens";
      EXPECT_EQ(out[0].finish, c.contains("eos_token_id") ? gen::FinishReason::EosToken : gen::FinishReason::Length);
    }
  }
}

// ---- the decoding loop ----------------------------------------------------------------------

struct Loop {
  std::unique_ptr<Model<float>> m = load_pretrained<float>(kFixtureModel);
  std::unique_ptr<CausalDecoder<float>> dec = make_causal_decoder(*m, true);
  std::vector<gen::Generated> run(const gen::GenerationConfig& g, const std::vector<int32_t>& prompt,
                                  uint64_t prompt_index = 0) {
    return gen::generate(*dec, prompt, g, m->config().vocab_size, m->config().max_position_embeddings, prompt_index);
  }
};

gen::GenerationConfig sampling(uint64_t seed, int n) {
  gen::GenerationConfig g;
  g.do_sample = true;
  g.max_new_tokens = 16;
  g.seed = seed;
  g.num_return_sequences = n;
  g.temperature = 1.5;  // a flatter distribution: draws that differ between seeds
  g.top_k = 0;
  return g;
}

TEST(GenerateLoop, SamplingIsAFunctionOfTheSeed) {
  Loop l;
  const std::vector<int32_t> prompt = {5, 77, 300};
  const auto a = l.run(sampling(7, 3), prompt), b = l.run(sampling(7, 3), prompt), c = l.run(sampling(8, 3), prompt);
  for (size_t j = 0; j < 3; ++j) EXPECT_EQ(a[j].ids, b[j].ids);
  EXPECT_NE(a[0].ids, c[0].ids);
  EXPECT_NE(a[0].ids, a[1].ids);  // the sequences of one prompt draw from their own streams
  // Sequence 0 does not depend on how many sequences are asked for, nor on other prompts.
  EXPECT_EQ(l.run(sampling(7, 1), prompt)[0].ids, a[0].ids);
  EXPECT_NE(l.run(sampling(7, 1), prompt, 1)[0].ids, a[0].ids);
  // The recompute decoder draws the same tokens.
  Loop r;
  r.dec = make_causal_decoder(*r.m, false);
  EXPECT_EQ(r.run(sampling(7, 3), prompt)[2].ids, a[2].ids);
}

TEST(GenerateLoop, TopKOneSamplesTheGreedySequence) {
  Loop l;
  gen::GenerationConfig greedy;
  greedy.max_new_tokens = 12;
  gen::GenerationConfig g = sampling(3, 2);
  g.max_new_tokens = 12;
  g.top_k = 1;
  const std::vector<int32_t> prompt = {9, 8, 7, 6};
  const auto want = l.run(greedy, prompt)[0].ids;
  for (const auto& s : l.run(g, prompt)) EXPECT_EQ(s.ids, want);
}

TEST(GenerateLoop, EosEndsOneRowWhileTheOthersGoOn) {
  Loop l;
  gen::GenerationConfig g = sampling(11, 4);
  const std::vector<int32_t> prompt = {42, 43};
  const auto free_run = l.run(g, prompt);
  g.eos_token_ids = {free_run[1].ids[2]};  // row 1's third token
  const auto out = l.run(g, prompt);
  for (size_t j = 0; j < out.size(); ++j) {
    const auto& want = free_run[j].ids;
    const auto stop = std::find(want.begin(), want.end(), g.eos_token_ids[0]);
    if (stop == want.end()) {
      EXPECT_EQ(out[j].ids, want);
      EXPECT_EQ(out[j].finish, gen::FinishReason::Length);
    } else {
      EXPECT_EQ(out[j].ids, std::vector<int32_t>(want.begin(), stop + 1));
      EXPECT_EQ(out[j].finish, gen::FinishReason::EosToken);
    }
  }
  EXPECT_LE(out[1].ids.size(), 3u);
}

TEST(GenerateLoop, BudgetsAndPositions) {
  Loop l;
  gen::GenerationConfig g;
  g.max_length = 10;  // from generation_config.json: prompt + new tokens
  EXPECT_EQ(l.run(g, {1, 2, 3})[0].ids.size(), 7u);
  EXPECT_THROW(l.run(g, std::vector<int32_t>(10, 4)), Error);  // no room left
  g.max_new_tokens = 5;                                          // wins over max_length
  EXPECT_EQ(l.run(g, std::vector<int32_t>(10, 4))[0].ids.size(), 5u);
  g.max_new_tokens = 29;  // 100 + 29 > n_positions 128
  EXPECT_THROW(l.run(g, std::vector<int32_t>(100, 4)), Error);
  g.max_new_tokens = 28;
  EXPECT_EQ(l.run(g, std::vector<int32_t>(100, 4))[0].ids.size(), 28u);
}

TEST(GenerationConfig, ValidationFollowsHf) {
  gen::GenerationConfig g;
  EXPECT_NO_THROW(g.validate(""));
  g.num_beams = 4;
  g.num_return_sequences = 4;  // beam search may return all its beams
  g.length_penalty = -0.5;
  EXPECT_NO_THROW(g.validate(""));
  auto refused = [](auto edit) {
    gen::GenerationConfig c;
    c.do_sample = true;
    edit(c);
    EXPECT_THROW(c.validate(""), Error);
  };
  refused([](auto& c) { c.top_p = 0.0; });
  refused([](auto& c) { c.top_p = 1.5; });
  refused([](auto& c) { c.temperature = 0.0; });
  refused([](auto& c) { c.top_k = -1; });
  refused([](auto& c) { c.max_new_tokens = 0; });
  refused([](auto& c) { c.num_return_sequences = 0; });
  refused([](auto& c) {
    c.do_sample = false;
    c.num_return_sequences = 2;  // greedy gives one sequence (HF raises the same)
  });
  auto beam = [](auto edit) {
    gen::GenerationConfig c;
    c.num_beams = 3;
    edit(c);
    try {
      c.validate("where: ");
      ADD_FAILURE() << "accepted";
      return std::string();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(beam([](auto& c) { c.num_return_sequences = 4; }),
            "where: num_return_sequences (4) has to be smaller or equal to num_beams (3): beam search returns its best "
            "finished hypotheses");
  EXPECT_NE(beam([](auto& c) { c.num_beams = 0; }).find("num_beams must be a positive integer"), std::string::npos);
  EXPECT_NE(beam([](auto& c) { c.do_sample = true; }).find("beam sampling (num_beams 3 with do_sample) is not "
                                                            "implemented"),
            std::string::npos);
  EXPECT_NE(beam([](auto& c) { c.length_penalty = NAN; }).find("length_penalty must be a finite number"),
            std::string::npos);
  EXPECT_NE(beam([](auto& c) { c.no_repeat_ngram_size = -1; }).find("no_repeat_ngram_size must be 0 (off)"),
            std::string::npos);
  EXPECT_NE(beam([](auto& c) { c.repetition_penalty = 0; }).find("repetition_penalty must be a strictly positive"),
            std::string::npos);
  EXPECT_EQ(gen::parse_early_stopping("never", ""), gen::EarlyStopping::Never);
  EXPECT_EQ(gen::parse_early_stopping("true", ""), gen::EarlyStopping::OnceNumBeamsDone);
  EXPECT_EQ(gen::parse_early_stopping("false", ""), gen::EarlyStopping::Heuristic);
  EXPECT_THROW(gen::parse_early_stopping("sometimes", ""), Error);
}

TEST(GenerationConfig, ReadsHfFieldsAndNamesWhatItIgnores) {
  test::ScratchDir dir;
  std::ofstream(dir.path("generation_config.json"))
      << R"({"do_sample": true, "top_k": 0, "top_p": 0.9, "temperature": 0.7, "max_length": 64,
            "eos_token_id": [50256, 7], "bos_token_id": 50256, "num_beams": 1, "repetition_penalty": 1.3,
            "no_repeat_ngram_size": 3, "min_length": 5, "num_beam_groups": 1, "typical_p": 0.5,
            "transformers_version": "4.36.2"})";
  std::vector<std::string> ignored;
  const gen::GenerationConfig g = gen::load_generation_config(dir.path(), &ignored);
  EXPECT_TRUE(g.do_sample);
  EXPECT_EQ(g.top_k, 0);
  EXPECT_DOUBLE_EQ(g.top_p, 0.9);
  EXPECT_DOUBLE_EQ(g.temperature, 0.7);
  EXPECT_EQ(g.max_length, 64);
  EXPECT_FALSE(g.max_new_tokens.has_value());
  EXPECT_EQ(g.eos_token_ids, (std::vector<int32_t>{50256, 7}));
  EXPECT_EQ(g.bos_token_id, 50256);
  EXPECT_DOUBLE_EQ(g.repetition_penalty, 1.3);
  EXPECT_EQ(g.no_repeat_ngram_size, 3);
  EXPECT_EQ(g.min_length, 5);
  EXPECT_EQ(ignored, std::vector<std::string>{"typical_p = 0.5"});  // num_beam_groups 1 is HF's default
}

TEST(GenerationConfig, ReadsBeamSearchFields) {
  test::ScratchDir dir;
  std::ofstream(dir.path("generation_config.json"))
      << R"({"num_beams": 4, "length_penalty": 2.0, "early_stopping": "never", "num_return_sequences": 3})";
  gen::GenerationConfig g = gen::load_generation_config(dir.path(), nullptr);
  EXPECT_EQ(g.num_beams, 4);
  EXPECT_DOUBLE_EQ(g.length_penalty, 2.0);
  EXPECT_EQ(g.early_stopping, gen::EarlyStopping::Never);
  EXPECT_EQ(g.num_return_sequences, 3);
  EXPECT_NO_THROW(g.validate(""));
  for (const auto& [text, want] : {std::pair{"true", gen::EarlyStopping::OnceNumBeamsDone},
                                   std::pair{"false", gen::EarlyStopping::Heuristic},
                                   std::pair{"null", gen::EarlyStopping::Heuristic}}) {
    std::ofstream(dir.path("generation_config.json")) << R"({"early_stopping": )" << text << "}";
    EXPECT_EQ(gen::load_generation_config(dir.path(), nullptr).early_stopping, want) << text;
  }
  std::ofstream(dir.path("generation_config.json")) << R"({"early_stopping": "sometimes"})";
  try {
    gen::load_generation_config(dir.path(), nullptr);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "generation_config.json: field 'early_stopping' must be true, false or \"never\", got \"sometimes\""),
              std::string::npos)
        << e.what();
  }
}

// The length processors' fields (generate/logits_processors.h), from a file and checked.
TEST(GenerationConfig, ReadsAndChecksTheLengthProcessorFields) {
  test::ScratchDir dir;
  std::ofstream(dir.path("generation_config.json"))
      << R"({"min_length": 56, "min_new_tokens": 3, "forced_bos_token_id": 0, "forced_eos_token_id": [2, 5]})";
  std::vector<std::string> ignored;
  gen::GenerationConfig g = gen::load_generation_config(dir.path(), &ignored);
  EXPECT_TRUE(ignored.empty());
  EXPECT_EQ(g.min_length, 56);
  EXPECT_EQ(g.min_new_tokens, 3);
  EXPECT_EQ(g.min_sequence_length(4), 7);  // min_new_tokens wins, after the prompt
  EXPECT_EQ(g.forced_bos_token_id, 0);
  EXPECT_EQ(g.forced_eos_token_ids, (std::vector<int32_t>{2, 5}));
  EXPECT_NO_THROW(g.check_forced_ids(6, ""));
  try {
    g.check_forced_ids(5, "where: ");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "where: forced_eos_token_id 5 is not a token of the model's vocabulary (vocab_size 5)");
  }
  // null is unset, as in HF.
  std::ofstream(dir.path("generation_config.json")) << R"({"forced_bos_token_id": null, "min_new_tokens": null})";
  g = gen::load_generation_config(dir.path(), nullptr);
  EXPECT_FALSE(g.forced_bos_token_id.has_value());
  EXPECT_FALSE(g.min_new_tokens.has_value());
  EXPECT_EQ(g.min_sequence_length(4), 0);
  std::ofstream(dir.path("generation_config.json")) << R"({"forced_eos_token_id": -1})";
  EXPECT_THROW(gen::load_generation_config(dir.path(), nullptr), Error);
  auto message = [](auto edit) {
    gen::GenerationConfig c;
    edit(c);
    try {
      c.validate("");
      return std::string("accepted");
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(message([](auto& c) { c.min_length = -1; }), "min_length must be a non-negative integer (0: off), got -1");
  EXPECT_EQ(message([](auto& c) { c.min_new_tokens = -2; }), "min_new_tokens must be a non-negative integer, got -2");
  EXPECT_EQ(message([](auto& c) { c.forced_bos_token_id = -1; }), "forced_bos_token_id must be a token id, got -1");
  EXPECT_EQ(message([](auto& c) { c.min_new_tokens = 0; }), "accepted");
}

// A BART config.json without generation_config.json: its forced_eos_token_id applies, as HF
// reads it from the legacy config.
TEST(GenerationConfig, ConfigJsonsForcedEosApplies) {
  test::ScratchDir dir;
  std::ofstream(dir.path("config.json"))
      << R"({"model_type": "bart", "eos_token_id": 2, "forced_eos_token_id": 2, "forced_bos_token_id": 0})";
  const gen::GenerationConfig g = gen::load_generation_config(dir.path(), nullptr);
  EXPECT_EQ(g.forced_eos_token_ids, std::vector<int32_t>{2});
  EXPECT_EQ(g.forced_bos_token_id, 0);
}

TEST(GenerationConfig, WithoutGenerationConfigJsonTheModelConfigsIdsApply) {
  test::ScratchDir dir;
  std::ofstream(dir.path("config.json")) << R"({"model_type": "gpt2", "eos_token_id": 3, "bos_token_id": 2})";
  const gen::GenerationConfig g = gen::load_generation_config(dir.path(), nullptr);
  EXPECT_EQ(g.eos_token_ids, std::vector<int32_t>{3});
  EXPECT_EQ(g.bos_token_id, 2);
  EXPECT_FALSE(g.do_sample);
  EXPECT_EQ(g.new_token_budget(5), gen::GenerationConfig::kDefaultMaxNewTokens);
}

}  // namespace
}  // namespace strata
