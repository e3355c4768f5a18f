// Training-step throughput: forward + backward + AdamW on the DistilBERT-base and BERT-base
// shapes with a 2-label classification head, and GPT-2 124M with its tied LM head (random
// init, dropout 0.1 as in HF training mode, no padding), next to the GEMM ceiling measured in
// the same run. Each configuration runs in its own child process so its peak RSS is its own.
// Prints one table.
//
//   bench_train_step [--threads 2] [--steps 5] [--warmup 1] [--only NAME|FAMILY] [--json FILE]
//                    [--gemm-threading library|tiles] [--precision fp32|bf16|fp16] [--emulated]
//
// --gemm-threading: library (strata train's default: oneDNN threads each product) or tiles
// (full_determinism: fixed single-threaded tiles); the ceiling is measured the same way.
// --precision: the products' inputs, as strata train's bf16 / fp16 (kernels/matmul_precision.h):
// natively (oneDNN's bf16 matmul; fp16 has no native path), or with --emulated rounded and
// multiplied in fp32. The ceiling is measured in the same precision, conversions included.
//
// FLOPs per step (hf-oracle's hf_throughput.py count_flops, so figures compare):
//   brief   = 6 * N_nonemb * B*T + 12 * L * H * T^2 * B
//   lm head = 6 * V * H * B*T for the causal-LM head (0 for classification heads)
//   N_nonemb = parameters minus the word / position / token-type embedding tables (GPT-2:
//   wte, wpe). The tied LM head is not in N_nonemb, so its product (2 * B*T * H * V forward,
//   twice that backward) is the separate lm-head term. GFLOP/s and "x ceiling" use
//   brief + lm head: the work the step really does. The attention term counts the full T x T
//   scores, causal or not, as the peer's formula does.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "kernels/gemm_threading.h"
#include "kernels/matmul_precision.h"
#include "kernels/ops.h"
#include "models/registry.h"
#include "train/optimizer.h"
#include "util/rng.h"

namespace {

using namespace strata;
using bench::machine;
using bench::median;
using bench::run_in_child;
using Clock = std::chrono::steady_clock;

struct Config {
  const char* name;
  const char* family;  // --only accepts this to run every row of the family
  int layers, batch, seq;
};
constexpr Config kConfigs[] = {
    {"distilbert-base b8", "distilbert", 6, 8, 128},
    {"distilbert-base b32", "distilbert", 6, 32, 128},
    {"bert-base b8", "bert", 12, 8, 128},
    {"gpt2 b4 t256", "gpt2", 12, 4, 256},
    {"gpt2 b4 t64", "gpt2", 12, 4, 64},
};

struct Result {
  double ms_median, ms_min, ms_max, flops, flops_lm_head, gflops;  // flops includes flops_lm_head
  double fwd_ms, bwd_ms, opt_ms;  // medians of the step's phases (forward includes the loss)
  double loss;
  double peak_rss_mib;  // filled in by the parent
};

ModelConfig make_config(const Config& c) {
  nlohmann::json j;
  const std::string family = c.family;
  if (family == "gpt2") return bench::gpt2_124m_config(c.layers);
  if (family == "distilbert") {
    j = {{"model_type", "distilbert"}, {"vocab_size", 30522}, {"dim", 768},          {"n_layers", c.layers},
         {"n_heads", 12},              {"hidden_dim", 3072},  {"max_position_embeddings", 512},
         {"activation", "gelu"},       {"dropout", 0.1},      {"attention_dropout", 0.1},
         {"seq_classif_dropout", 0.2}, {"pad_token_id", 0},   {"architectures", {"DistilBertForSequenceClassification"}}};
  } else {
    j = {{"model_type", "bert"},          {"vocab_size", 30522},  {"hidden_size", 768},
         {"num_hidden_layers", c.layers}, {"num_attention_heads", 12}, {"intermediate_size", 3072},
         {"max_position_embeddings", 512}, {"type_vocab_size", 2}, {"hidden_act", "gelu"},
         {"hidden_dropout_prob", 0.1},    {"attention_probs_dropout_prob", 0.1}, {"pad_token_id", 0},
         {"architectures", {"BertForSequenceClassification"}}};
  }
  return parse_model_config(j, "bench config");
}

// The brief formula (header comment); the LM-head term is step_flops_lm_head.
double step_flops_brief(const Model<float>& m, const Config& c) {
  size_t emb = 0;
  for (const auto& e : m.table().entries())
    for (const char* table : {"word_embeddings", "position_embeddings", "token_type_embeddings", "wte", "wpe"})
      if (e.name.find(table) != std::string::npos) {
        emb += e.numel;
        break;
      }
  const double nonemb = static_cast<double>(m.table().total() - emb);
  const double tokens = static_cast<double>(c.batch) * c.seq;
  return 6.0 * nonemb * tokens + 12.0 * c.layers * m.config().hidden_size * static_cast<double>(c.seq) * c.seq * c.batch;
}

double step_flops_lm_head(const Model<float>& m, const Config& c) {
  const ModelConfig& mc = m.config();
  if (mc.task != Task::CausalLM) return 0;
  return 6.0 * mc.vocab_size * mc.hidden_size * static_cast<double>(c.batch) * c.seq;
}

Result run_config(const Config& c, int steps, int warmup) {
  const std::unique_ptr<Model<float>> owned = make_model<float>(make_config(c));
  Model<float>& model = *owned;
  model.init_weights(0);
  Batch b;
  b.B = c.batch;
  b.T = c.seq;
  const size_t n = static_cast<size_t>(c.batch) * c.seq;
  const CounterRng rng(1, 0);
  for (size_t i = 0; i < n; ++i) b.input_ids.push_back(1 + static_cast<int32_t>(rng.bits(i) % 30000));
  b.attention_mask.assign(n, 1);
  b.token_type_ids.assign(n, 0);
  if (model.config().task == Task::CausalLM) {
    b.labels = b.input_ids;  // run_clm's labels; the loss shifts them
  } else {
    for (int i = 0; i < c.batch; ++i) b.labels.push_back(static_cast<int32_t>(rng.bits(n + i) % 2));
  }

  OptimizerConfig oc;
  oc.lr = 5e-5;
  oc.weight_decay = 0.01;
  Optimizer<float> opt(oc, model.table());
  nn::ActivationPolicy policy;  // as strata train keeps activations under this precision
  policy.products = kernels::matmul_precision();
  const std::unique_ptr<ModelState> acts = model.new_state(policy);
  std::vector<double> ms, fwd, bwd, upd;
  double loss = 0;
  auto since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
  for (int s = 0; s < warmup + steps; ++s) {
    const auto t0 = Clock::now();
    const nn::DropoutCtx drop{true, mix64(static_cast<uint64_t>(s))};
    model.grads().zero();
    model.forward(b, drop, *acts);
    loss = model.loss(b, *acts).loss;
    const auto t1 = Clock::now();
    model.backward(b, drop, *acts);
    const auto t2 = Clock::now();
    opt.step(model.params().data(), model.grads().data(), oc.lr);
    if (s < warmup) continue;
    ms.push_back(since(t0));
    fwd.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    bwd.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
    upd.push_back(since(t2));
  }
  Result r{};
  r.ms_median = median(ms);
  r.ms_min = *std::min_element(ms.begin(), ms.end());
  r.ms_max = *std::max_element(ms.begin(), ms.end());
  r.fwd_ms = median(fwd);
  r.bwd_ms = median(bwd);
  r.opt_ms = median(upd);
  r.flops_lm_head = step_flops_lm_head(model, c);
  r.flops = step_flops_brief(model, c) + r.flops_lm_head;
  r.gflops = r.flops / (r.ms_median * 1e-3) / 1e9;
  r.loss = loss;
  return r;
}

struct GemmShape {
  const char* name;
  bool ta, tb;
  int m, n, k;
};
constexpr GemmShape kGemmShapes[] = {
    {"fwd 4096x3072x768", false, true, 4096, 3072, 768},
    {"fwd 4096x768x3072", false, true, 4096, 768, 3072},
    {"bwd-data 4096x768x3072", false, false, 4096, 768, 3072},
    {"bwd-weight 3072x768x4096", true, false, 3072, 768, 4096},
    {"fwd 4096x2304x768", false, true, 4096, 2304, 768},
};
struct GemmResult {
  double gflops[std::size(kGemmShapes)];
};

// Sustained GFLOP/s of kernels::gemm on the products of a BERT-base layer at 4096 tokens.
GemmResult measure_gemm() {
  GemmResult out{};
  for (size_t i = 0; i < std::size(kGemmShapes); ++i) {
    const GemmShape& s = kGemmShapes[i];
    const int lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
    std::vector<float> A(static_cast<size_t>(s.m) * s.k, 0.01f), B(static_cast<size_t>(s.k) * s.n, 0.02f),
        C(static_cast<size_t>(s.m) * s.n);
    std::vector<double> t;
    for (int r = 0; r < 6; ++r) {
      const auto t0 = Clock::now();
      kernels::gemm<float>(s.ta, s.tb, s.m, s.n, s.k, 1.0f, A.data(), lda, B.data(), ldb, 0.0f, C.data(), s.n);
      t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    t.erase(t.begin());  // warm-up
    out.gflops[i] = 2.0 * s.m * s.n * s.k / median(t) / 1e9;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, steps = 5, warmup = 1;
  std::string only, json_path, gemm_threading = "library", precision = "fp32";
  bool emulated = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--threads") threads = std::stoi(next());
    else if (a == "--steps") steps = std::stoi(next());
    else if (a == "--warmup") warmup = std::stoi(next());
    else if (a == "--only") only = next();
    else if (a == "--json") json_path = next();
    else if (a == "--gemm-threading") gemm_threading = next();
    else if (a == "--precision") precision = next();
    else if (a == "--emulated") emulated = true;
    else {
      std::fprintf(stderr, "usage: bench_train_step [--threads N] [--steps N] [--warmup N] [--only NAME|FAMILY] [--json FILE] "
                           "[--gemm-threading library|tiles] [--precision fp32|bf16|fp16] [--emulated]\n");
      return 2;
    }
  }
  if (precision != "fp32" && precision != "bf16" && precision != "fp16") {
    std::fprintf(stderr, "--precision %s: expected fp32, bf16 or fp16\n", precision.c_str());
    return 2;
  }
  const kernels::MatmulPrecision products = precision == "bf16"   ? kernels::MatmulPrecision::Bf16
                                            : precision == "fp16" ? kernels::MatmulPrecision::Fp16
                                                                  : kernels::MatmulPrecision::Fp32;
  const kernels::MatmulPath path = emulated ? kernels::MatmulPath::Emulated : kernels::MatmulPath::Native;
  if (std::string why; !kernels::native_matmul_available(products, &why) && !emulated) {
    std::fprintf(stderr, "--precision %s: %s (add --emulated to time the emulated path)\n", precision.c_str(), why.c_str());
    return 2;
  }
  if (gemm_threading != "library" && gemm_threading != "tiles") {
    std::fprintf(stderr, "--gemm-threading %s: expected library or tiles\n", gemm_threading.c_str());
    return 2;
  }
  const kernels::GemmThreading mode =
      gemm_threading == "tiles" ? kernels::GemmThreading::FixedTiles : kernels::GemmThreading::Library;
  auto set_threads = [&] {
    kernels::set_num_threads(threads);
    kernels::set_gemm_threading(mode);
    kernels::set_matmul_precision(products, path);
  };
  auto selected = [&](const Config& c) { return only.empty() || only == c.name || only == c.family; };
  if (std::none_of(std::begin(kConfigs), std::end(kConfigs), selected)) {
    std::fprintf(stderr, "--only %s: no such configuration or family; the configurations (family) are:", only.c_str());
    for (const Config& c : kConfigs) std::fprintf(stderr, " '%s' (%s)", c.name, c.family);
    std::fprintf(stderr, "\n");
    return 2;
  }
  const std::string implementation = kernels::matmul_implementation(products, path);
  std::printf("strata training-step benchmark | %s | %d threads, GEMM threading %s | products: %s (%s) | median of %d "
              "steps after %d warm-up\n",
              machine().c_str(), threads, gemm_threading.c_str(), precision.c_str(), implementation.c_str(), steps, warmup);
  GemmResult gemm{};
  double rss = 0;
  if (!run_in_child([&] { set_threads(); return measure_gemm(); }, &gemm, &rss)) {
    std::fprintf(stderr, "GEMM measurement failed\n");
    return 1;
  }
  const double ceiling = *std::max_element(std::begin(gemm.gflops), std::end(gemm.gflops));
  std::printf("GEMM ceiling (kernels::gemm in these products, best of BERT-base shapes at 4096 tokens): %.1f GFLOP/s\n", ceiling);
  for (size_t i = 0; i < std::size(kGemmShapes); ++i)
    std::printf("  %-26s %7.1f GFLOP/s\n", kGemmShapes[i].name, gemm.gflops[i]);

  std::printf("\n%-22s %10s %22s %10s %10s %9s %10s %9s %8s %9s\n", "config", "ms/step", "fwd/bwd/AdamW ms",
              "samples/s", "tokens/s", "GFLOP", "GFLOP/s", "x ceiling", "RSS MiB", "loss");
  nlohmann::json out = {{"machine", machine()}, {"threads", threads}, {"gemm_threading", gemm_threading},
                        {"precision", precision}, {"matmul", implementation}, {"gemm_ceiling_gflops", ceiling}};
  for (const Config& c : kConfigs) {
    if (!selected(c)) continue;
    Result r{};
    if (!run_in_child([&] { set_threads(); return run_config(c, steps, warmup); }, &r,
                      &r.peak_rss_mib)) {
      std::fprintf(stderr, "%s: the benchmark child failed\n", c.name);
      return 1;
    }
    const double tokens = static_cast<double>(c.batch) * c.seq;
    char phases[64];
    std::snprintf(phases, sizeof phases, "%.0f/%.0f/%.0f", r.fwd_ms, r.bwd_ms, r.opt_ms);
    std::printf("%-22s %10.1f %22s %10.2f %10.0f %9.1f %10.1f %9.2f %8.0f %9.4f\n", c.name, r.ms_median, phases,
                c.batch / (r.ms_median * 1e-3), tokens / (r.ms_median * 1e-3), r.flops / 1e9, r.gflops,
                r.gflops / ceiling, r.peak_rss_mib, r.loss);
    std::fflush(stdout);
    out["configs"].push_back({{"name", c.name},
                              {"batch", c.batch},
                              {"seq", c.seq},
                              {"ms_per_step", {{"median", r.ms_median}, {"min", r.ms_min}, {"max", r.ms_max}}},
                              {"phase_ms", {{"forward", r.fwd_ms}, {"backward", r.bwd_ms}, {"adamw", r.opt_ms}}},
                              {"samples_per_s", c.batch / (r.ms_median * 1e-3)},
                              {"tokens_per_s", tokens / (r.ms_median * 1e-3)},
                              {"flops_per_step", r.flops},
                              {"flops_lm_head_per_step", r.flops_lm_head},
                              {"gflops_per_s", r.gflops},
                              {"ratio_to_gemm_ceiling", r.gflops / ceiling},
                              {"peak_rss_mib", r.peak_rss_mib}});
  }
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(1) << "\n";
  return 0;
}
