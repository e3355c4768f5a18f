// Greedy generation speed: the KV-cache decoders against recomputing the whole prefix through
// Model::infer at every token (the decoder `use_cache = false` runs), on GPT-2 (the tiny
// test-fixture shape and 124M) and the encoder-decoders BART-base and t5-small (random init:
// speed does not depend on the weights). One row, a prompt of P random tokens (an
// encoder-decoder's source; its decoder starts from decoder_start_token_id), then N new tokens,
// each fed back. Prints one table: prefill time (an encoder-decoder's includes running the
// encoder and, cached, its cross-attention keys and values), decode speed (new tokens after the
// first) and end-to-end new tokens per second, medians over the runs, and the cache's speedup
// over recompute in the same process.
//
//   bench_generate [--threads 2] [--runs 3] [--prompt 32] [--new 64]
//                  [--only tiny|gpt2-124m|bart-base|t5-small]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "generate/sampling.h"
#include "kernels/ops.h"
#include "models/causal_decoder.h"
#include "models/registry.h"
#include "util/rng.h"

namespace {

using namespace strata;
using bench::machine;
using bench::median;
using Clock = std::chrono::steady_clock;

struct Shape {
  const char* name;
  nlohmann::json config;  // config.json as HF writes it
};
const Shape kShapes[] = {
    {"tiny",  // tests/fixtures/gpt2-causal-lm
     {{"model_type", "gpt2"}, {"architectures", {"GPT2LMHeadModel"}}, {"vocab_size", 512}, {"n_positions", 128},
      {"n_embd", 64}, {"n_layer", 2}, {"n_head", 4}}},
    {"gpt2-124m",
     {{"model_type", "gpt2"}, {"architectures", {"GPT2LMHeadModel"}}, {"vocab_size", 50257}, {"n_positions", 1024},
      {"n_embd", 768}, {"n_layer", 12}, {"n_head", 12}}},
    {"bart-base",  // facebook/bart-base's shape
     {{"model_type", "bart"}, {"architectures", {"BartForConditionalGeneration"}}, {"vocab_size", 50265},
      {"d_model", 768}, {"encoder_layers", 6}, {"decoder_layers", 6}, {"encoder_attention_heads", 12},
      {"decoder_attention_heads", 12}, {"encoder_ffn_dim", 3072}, {"decoder_ffn_dim", 3072},
      {"max_position_embeddings", 1024}, {"pad_token_id", 1}, {"bos_token_id", 0}, {"eos_token_id", 2},
      {"decoder_start_token_id", 2}}},
    {"t5-small",  // google-t5/t5-small's shape
     {{"model_type", "t5"}, {"architectures", {"T5ForConditionalGeneration"}}, {"vocab_size", 32128},
      {"d_model", 512}, {"d_kv", 64}, {"d_ff", 2048}, {"num_heads", 8}, {"num_layers", 6},
      {"num_decoder_layers", 6}, {"feed_forward_proj", "relu"}, {"pad_token_id", 0}, {"eos_token_id", 1},
      {"decoder_start_token_id", 0}}},
};

struct Timing {
  double prefill_ms, decode_ms;  // decode: the N-1 single-token steps after the prefill
};

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// One greedy generation; returns its timings and appends its tokens to `tokens`. A causal LM
// continues the prompt; an encoder-decoder reads it as the source (its decoder, made here, runs
// the encoder) and decodes from `start`.
Timing run_once(const Model<float>& model, bool cache, const std::vector<int32_t>& prompt, int new_tokens,
                std::vector<int32_t>& tokens) {
  const bool seq2seq = model.config().task == Task::Seq2SeqLM;
  const std::vector<int32_t> first =
      seq2seq ? std::vector<int32_t>{model.config().raw.at("decoder_start_token_id").get<int32_t>()} : prompt;
  auto t = Clock::now();
  const auto dec = seq2seq ? make_seq2seq_decoder(model, prompt, cache) : make_causal_decoder(model, cache);
  dec->reset(1, static_cast<int>(first.size()) + new_tokens);
  const float* logits = dec->append(first.data(), static_cast<int>(first.size()));
  Timing r{ms_since(t), 0};
  t = Clock::now();
  const int vocab = model.config().vocab_size;
  for (int i = 0; i < new_tokens; ++i) {
    const int32_t next = gen::argmax(logits, vocab);
    tokens.push_back(next);
    if (i + 1 < new_tokens) logits = dec->append(&next, 1);
  }
  r.decode_ms = ms_since(t);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, runs = 3, P = 32, N = 64;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--threads") threads = std::atoi(v.c_str());
    else if (k == "--runs") runs = std::atoi(v.c_str());
    else if (k == "--prompt") P = std::atoi(v.c_str());
    else if (k == "--new") N = std::atoi(v.c_str());
    else if (k == "--only") only = v;
    else {
      std::fprintf(stderr, "bench_generate: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (runs < 1 || P < 1 || N < 2) {
    std::fprintf(stderr, "bench_generate: need --runs >= 1, --prompt >= 1, --new >= 2\n");
    return 2;
  }
  kernels::set_num_threads(threads);
  std::printf("greedy generation, 1 row, prompt %d tokens + %d new; %s, %d threads; medians of %d runs\n\n", P, N,
              machine().c_str(), threads, runs);
  std::printf("| model | decoder | prefill ms | decode ms/token | decode tokens/s | end-to-end tokens/s | speedup |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (const Shape& s : kShapes) {
    if (!only.empty() && only != s.name) continue;
    const std::unique_ptr<Model<float>> model = make_model<float>(parse_model_config(s.config, s.name));
    model->init_weights(0);
    const int vocab = model->config().vocab_size;
    const CounterRng rng(1, 0);
    std::vector<int32_t> prompt;
    for (int i = 0; i < P; ++i) prompt.push_back(static_cast<int32_t>(rng.bits(static_cast<uint64_t>(i)) % vocab));

    double cached_e2e = 0;
    std::vector<int32_t> cached_tokens;
    for (bool cache : {true, false}) {
      std::vector<double> prefill, decode, e2e;
      std::vector<int32_t> tokens;
      run_once(*model, cache, prompt, N, tokens);  // warm-up: library code paths
      for (int r = 0; r < runs; ++r) {
        tokens.clear();
        const Timing t = run_once(*model, cache, prompt, N, tokens);
        prefill.push_back(t.prefill_ms);
        decode.push_back(t.decode_ms / (N - 1));
        e2e.push_back(N / ((t.prefill_ms + t.decode_ms) * 1e-3));
      }
      if (cache) cached_tokens = tokens;
      else if (tokens != cached_tokens)
        std::fprintf(stderr, "bench_generate: %s: the two decoders chose different tokens\n", s.name);
      const double tps = median(e2e);
      if (cache) cached_e2e = tps;
      std::printf("| %s | %s | %.2f | %.2f | %.1f | %.1f | %s |\n", s.name, cache ? "kv cache" : "recompute",
                  median(prefill), median(decode), 1e3 / median(decode), tps,
                  cache ? "" : (std::to_string(cached_e2e / tps).substr(0, 4) + "x").c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
