// Greedy generation speed: GPT-2's KV-cache decoder against recomputing the whole prefix
// through Model::infer at every token (the decoder `use_cache = false` runs), on the tiny
// test-fixture shape and on GPT-2 124M (random init: speed does not depend on the weights).
// One row, a prompt of P random tokens, then N new tokens, each fed back. Prints one table:
// prefill time, decode speed (new tokens after the first) and end-to-end new tokens per
// second, medians over the runs, and the cache's speedup over recompute in the same process.
//
//   bench_generate [--threads 2] [--runs 3] [--prompt 32] [--new 64] [--only tiny|gpt2-124m]
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
  int vocab, positions, embd, layers, heads;
};
constexpr Shape kShapes[] = {
    {"tiny", 512, 128, 64, 2, 4},  // tests/fixtures/gpt2-causal-lm
    {"gpt2-124m", 50257, 1024, 768, 12, 12},
};

struct Timing {
  double prefill_ms, decode_ms;  // decode: the N-1 single-token steps after the prefill
};

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// One greedy generation; returns its timings and appends its tokens to `tokens`.
Timing run_once(CausalDecoder<float>& dec, const std::vector<int32_t>& prompt, int new_tokens, int vocab,
                std::vector<int32_t>& tokens) {
  const int P = static_cast<int>(prompt.size());
  dec.reset(1, P + new_tokens);
  auto t = Clock::now();
  const float* logits = dec.append(prompt.data(), P);
  Timing r{ms_since(t), 0};
  t = Clock::now();
  for (int i = 0; i < new_tokens; ++i) {
    const int32_t next = gen::argmax(logits, vocab);
    tokens.push_back(next);
    if (i + 1 < new_tokens) logits = dec.append(&next, 1);
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
    const nlohmann::json j = {{"model_type", "gpt2"}, {"architectures", {"GPT2LMHeadModel"}},
                              {"vocab_size", s.vocab}, {"n_positions", s.positions}, {"n_embd", s.embd},
                              {"n_layer", s.layers},   {"n_head", s.heads}};
    const std::unique_ptr<Model<float>> model = make_model<float>(parse_model_config(j, s.name));
    model->init_weights(0);
    const CounterRng rng(1, 0);
    std::vector<int32_t> prompt;
    for (int i = 0; i < P; ++i) prompt.push_back(static_cast<int32_t>(rng.bits(static_cast<uint64_t>(i)) % s.vocab));

    double cached_e2e = 0;
    std::vector<int32_t> cached_tokens;
    for (bool cache : {true, false}) {
      const auto dec = make_causal_decoder(*model, cache);
      std::vector<double> prefill, decode, e2e;
      std::vector<int32_t> tokens;
      run_once(*dec, prompt, N, s.vocab, tokens);  // warm-up: buffers, library code paths
      for (int r = 0; r < runs; ++r) {
        tokens.clear();
        const Timing t = run_once(*dec, prompt, N, s.vocab, tokens);
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
