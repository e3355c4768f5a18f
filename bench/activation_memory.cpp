// Activation memory and step time under each activation policy (nn/activation_policy.h) on
// GPT-2 124M with its tied LM head (random init, dropout 0.1, AdamW): activations kept,
// recomputed for every block and every 2nd block, offloaded to the file-backed pool, and
// offloaded + every 2nd block recomputed. Each policy runs in its own forked child; the rounds
// run every policy in turn, so a slow spell of a shared machine hits all of them. Prints one
// table; timings are medians over all rounds' steps and ratios to "kept", as wall clock and
// as the process's CPU time (robust to other load on a shared machine).
//
//   bench_activation_memory [--threads 2] [--batch 4] [--seq 256] [--layers 12] [--steps 3]
//                           [--warmup 1] [--rounds 2] [--json FILE]
//
// Measured memory, per child: `base` is the resident set once parameters, gradients and AdamW
// state are allocated and touched; "activations" is the resident growth over the first
// forward (what the policy keeps for backward, the logits included: the estimate's
// activations term); "step" is the peak over all steps minus base (activations + backward
// scratch + anything else a step touches). The offload pool lives in the page cache of an
// unlinked file in $TMPDIR: not in the resident set, reported apart.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "kernels/ops.h"
#include "models/memory_estimate.h"
#include "models/registry.h"
#include "tensor/resident_memory.h"
#include "train/optimizer.h"
#include "util/rng.h"

namespace {

using namespace strata;
using Clock = std::chrono::steady_clock;

struct Policy {
  const char* name;
  int checkpoint_every;
  bool offload;
};
constexpr Policy kPolicies[] = {
    {"kept", 0, false},
    {"checkpoint every block", 1, false},
    {"checkpoint every 2nd", 2, false},
    {"offload", 0, true},
    {"offload + ckpt every 2nd", 2, true},
};

struct Shape {
  int threads, batch, seq, layers, steps, warmup;
};

constexpr int kMaxSteps = 64;
struct ChildResult {  // trivially copyable: it crosses a pipe
  double step_ms[kMaxSteps], fwd_ms[kMaxSteps], bwd_ms[kMaxSteps];
  double cpu_ms[kMaxSteps];  // CPU time of the whole process over the step (every thread)
  double activations_mib, step_mib, pool_mib, loss;
};

double mib(size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// CPU time of this process, all threads (ms). On a shared machine the wall clock of a step
// includes the time other processes held the cores; the CPU time is the work the step did,
// the offloading thread's copies and page faults included.
double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string one;
  f >> one;
  return one;
}

nn::ActivationPolicy policy_of(const Policy& p) {
  nn::ActivationPolicy ap;
  ap.checkpoint_every = p.checkpoint_every;
  ap.offload = p.offload;
  if (const char* tmp = std::getenv("TMPDIR"); tmp && *tmp) ap.offload_dir = tmp;
  return ap;
}

ChildResult run_policy(const Policy& p, const Shape& s) {
  kernels::set_num_threads(s.threads);
  const auto model = make_model<float>(bench::gpt2_124m_config(s.layers));
  model->init_weights(0);
  Batch b;
  b.B = s.batch;
  b.T = s.seq;
  const size_t n = static_cast<size_t>(s.batch) * s.seq;
  const CounterRng rng(1, 0);
  for (size_t i = 0; i < n; ++i) b.input_ids.push_back(static_cast<int32_t>(rng.bits(i) % 50257));
  b.attention_mask.assign(n, 1);
  b.token_type_ids.assign(n, 0);
  b.labels = b.input_ids;
  OptimizerConfig oc;
  oc.lr = 5e-5;
  oc.weight_decay = 0.01;
  Optimizer<float> opt(oc, model->table());
  const auto acts = model->new_state(policy_of(p));
  const size_t base = resident_set_bytes();

  ChildResult r{};
  auto ms = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  for (int step = 0; step < s.warmup + s.steps; ++step) {
    const nn::DropoutCtx drop{true, mix64(static_cast<uint64_t>(step))};
    const auto t0 = Clock::now();
    const double cpu0 = process_cpu_ms();
    model->grads().zero();
    model->forward(b, drop, *acts);
    if (step == 0) r.activations_mib = mib(resident_set_bytes() - base);
    r.loss = model->loss(b, *acts).loss;
    const auto t1 = Clock::now();
    model->backward(b, drop, *acts);
    const auto t2 = Clock::now();
    opt.step(model->params().data(), model->grads().data(), oc.lr);
    const auto t3 = Clock::now();
    if (step < s.warmup) continue;
    r.cpu_ms[step - s.warmup] = process_cpu_ms() - cpu0;
    r.step_ms[step - s.warmup] = ms(t0, t3);
    r.fwd_ms[step - s.warmup] = ms(t0, t1);
    r.bwd_ms[step - s.warmup] = ms(t1, t2);
  }
  r.step_mib = mib(peak_resident_bytes() - base);
  r.pool_mib = mib(acts->offload_pool_bytes());
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  Shape s{2, 4, 256, 12, 3, 1};
  int rounds = 2;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> int {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::atoi(argv[++i]);
    };
    if (a == "--threads") s.threads = next();
    else if (a == "--batch") s.batch = next();
    else if (a == "--seq") s.seq = next();
    else if (a == "--layers") s.layers = next();
    else if (a == "--steps") s.steps = next();
    else if (a == "--warmup") s.warmup = next();
    else if (a == "--rounds") rounds = next();
    else if (a == "--json" && i + 1 < argc) json_path = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_activation_memory [--threads N] [--batch B] [--seq T] [--layers L] "
                           "[--steps N] [--warmup N] [--rounds N] [--json FILE]\n");
      return 2;
    }
  }
  if (s.steps < 1 || s.steps > kMaxSteps || rounds < 1 || s.batch < 1 || s.seq < 1 || s.seq > 1024 || s.layers < 1) {
    std::fprintf(stderr, "bench_activation_memory: need 1 <= steps <= %d, rounds >= 1, seq <= 1024 (n_positions)\n",
                 kMaxSteps);
    return 2;
  }
  std::printf("activation policies | GPT-2 124M LM head (%d blocks), batch %d x %d, fp32, AdamW | %s | %d threads | "
              "medians of %d rounds x %d steps after %d warm-up\n",
              s.layers, s.batch, s.seq, bench::machine().c_str(), s.threads, rounds, s.steps, s.warmup);

  std::printf("load average (1 min) at start: %s\n", load_average().c_str());
  std::vector<std::vector<double>> step_ms(std::size(kPolicies)), fwd(std::size(kPolicies)), bwd(std::size(kPolicies)),
      cpu(std::size(kPolicies));
  std::vector<ChildResult> last(std::size(kPolicies));
  for (int round = 0; round < rounds; ++round)
    for (size_t k = 0; k < std::size(kPolicies); ++k) {
      double rss = 0;
      if (!bench::run_in_child([&] { return run_policy(kPolicies[k], s); }, &last[k], &rss)) {
        std::fprintf(stderr, "%s: the benchmark child failed\n", kPolicies[k].name);
        return 1;
      }
      for (int i = 0; i < s.steps; ++i) {
        step_ms[k].push_back(last[k].step_ms[i]);
        fwd[k].push_back(last[k].fwd_ms[i]);
        bwd[k].push_back(last[k].bwd_ms[i]);
        cpu[k].push_back(last[k].cpu_ms[i]);
      }
    }

  // The estimate needs only the parameter table; the flat buffers are reserved, never touched.
  const auto shape_only = make_model<float>(bench::gpt2_124m_config(s.layers));
  std::printf("load average (1 min) at end: %s\n", load_average().c_str());
  std::printf("\n%-26s %9s %7s %13s %10s %7s | %21s %8s | %21s | %9s %9s\n", "policy", "ms/step", "x kept",
              "fwd/bwd ms", "CPU ms", "x kept", "activations MiB est/meas", "vs kept", "step peak MiB est/meas",
              "pool MiB", "loss");
  nlohmann::json out = {{"machine", bench::machine()}, {"threads", s.threads}, {"batch", s.batch}, {"seq", s.seq},
                        {"layers", s.layers}, {"rounds", rounds}, {"steps", s.steps}};
  const double kept_ms = bench::median(step_ms[0]), kept_cpu = bench::median(cpu[0]);
  const double kept_acts = last[0].activations_mib;
  for (size_t k = 0; k < std::size(kPolicies); ++k) {
    const MemoryEstimate e = estimate_training_memory(*shape_only, s.batch, s.seq, 4, 2, policy_of(kPolicies[k]));
    const ChildResult& r = last[k];
    const double med = bench::median(step_ms[k]), med_cpu = bench::median(cpu[k]);
    char phases[32], acts[32], step[32];
    std::snprintf(phases, sizeof phases, "%.0f/%.0f", bench::median(fwd[k]), bench::median(bwd[k]));
    std::snprintf(acts, sizeof acts, "%.0f / %.0f", mib(e.activations), r.activations_mib);
    std::snprintf(step, sizeof step, "%.0f / %.0f", mib(e.activations + e.scratch), r.step_mib);
    std::printf("%-26s %9.0f %7.3f %13s %10.0f %7.3f | %21s %7.0f%% | %21s | %9.0f %9.4f\n", kPolicies[k].name, med,
                med / kept_ms, phases, med_cpu, med_cpu / kept_cpu, acts, 100.0 * (r.activations_mib / kept_acts - 1),
                step, r.pool_mib, r.loss);
    out["policies"].push_back({{"policy", kPolicies[k].name},
                               {"ms_per_step_median", med},
                               {"ratio_to_kept", med / kept_ms},
                               {"cpu_ms_per_step_median", med_cpu},
                               {"cpu_ratio_to_kept", med_cpu / kept_cpu},
                               {"activations_mib_estimated", mib(e.activations)},
                               {"activations_mib_measured", r.activations_mib},
                               {"step_peak_mib_estimated", mib(e.activations + e.scratch)},
                               {"step_peak_mib_measured", r.step_mib},
                               {"offload_pool_mib", r.pool_mib},
                               {"offload_pool_mib_estimated", mib(e.offloaded)},
                               {"loss", r.loss}});
  }
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(1) << "\n";
  return 0;
}
