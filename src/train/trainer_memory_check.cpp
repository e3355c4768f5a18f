// Trainer::check_memory_fits: the memory plan against the memory this process may take, before
// the first step, so that a run that cannot fit stops with advice instead of being killed by
// the kernel's OOM killer hours in (docs/reliability.md, "Memory fit").
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/device.h"
#include "tensor/resident_memory.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/memory_headroom.h"

namespace strata {

namespace {

std::string mib(size_t bytes) { return cat(static_cast<int64_t>((bytes + (1 << 20) - 1) >> 20), " MiB"); }

}  // namespace

void Trainer::check_memory_fits(EvalShape eval) const {  // eval: by value, clamped below
  const char* skip = std::getenv("STRATA_SKIP_MEMORY_CHECK");
  if (skip && std::string(skip) == "1") return;
  // On a GPU the planned buffers live in its memory: what is free there plus what this process
  // holds there already (its weights and gradients). On the CPU the process may grow by its part
  // of the headroom (the ranks on this machine grow together), and holds its resident set
  // already, planned buffers (as far as touched) included, besides code, libraries and data.
  const bool gpu = kernels::on_cuda();
  const kernels::Device device = kernels::current_device();
  const MemoryHeadroom room = memory_headroom();
  const size_t resident = gpu ? kernels::memory_stats(device).reserved : resident_set_bytes();
  const size_t free_bytes =
      gpu ? kernels::device_properties(device).free_memory : room.bytes / static_cast<size_t>(ranks_on_machine_);
  const size_t limit = resident + free_bytes;
  const size_t held = gpu ? 0 : held_before_training_;
  const TrainingArguments& a = args_;
  // No batch is longer than the model's positions, whatever max_seq_length says (a stream fed
  // to the Trainer directly need not follow it).
  const int positions = model_->config().max_position_embeddings;
  const int B = a.per_device_train_batch_size, T = positions > 0 ? std::min(a.sequence_length(), positions)
                                                                 : a.sequence_length();
  eval.T = std::min(eval.T, T);
  // What the process will hold at its peak: the plan, with an evaluation pass if one runs,
  // plus what it holds besides the planned buffers (code, libraries, data), as the end-of-run
  // report predicts it.
  auto need = [&](const TrainingArguments& args, int b) {
    const RankMemoryPlan p = memory_plan(b, T, eval, args);
    return held + p.total() + (eval.B > 0 ? p.evaluation : 0);
  };
  const size_t needed = need(a, B);
  if (needed <= limit) return;

  // Settings that fit, each a change from the run's: a smaller per-device batch that keeps the
  // global batch through accumulation (the largest divisor of B that fits), activation
  // checkpointing, optimizer and gradient sharding over the data-parallel ranks.
  std::vector<std::string> fits;
  for (int b = B - 1; b >= 1; --b) {
    if (B % b != 0 || need(a, b) > limit) continue;
    fits.push_back(cat("per_device_train_batch_size: ", b, " with gradient_accumulation_steps: ",
                       a.gradient_accumulation_steps * (B / b), " (the same global batch; ", mib(need(a, b)), ")"));
    break;
  }
  if (!a.gradient_checkpointing) {
    TrainingArguments ckpt = a;
    ckpt.gradient_checkpointing = true;
    if (need(ckpt, B) <= limit) fits.push_back(cat("gradient_checkpointing: true (", mib(need(ckpt, B)), ")"));
  }
  if (data_parallel_size() > 1 && a.sharding_stage() < 2) {
    TrainingArguments zero = a;
    zero.zero_stage = 2;
    if (need(zero, B) <= limit) fits.push_back(cat("zero_stage: 2 (", mib(need(zero, B)), ")"));
  }
  const RankMemoryPlan plan = memory_plan(B, T, eval);
  const std::string where =
      gpu ? cat(" on ", device.str(), " (", kernels::device_properties(device).name, "): ", mib(resident),
                " it holds there now + ", mib(free_bytes), " free")
          : cat(" (", mib(resident), " it holds now + ",
                ranks_on_machine_ > 1 ? cat("a ", ranks_on_machine_, "th part of ") : std::string(), mib(room.bytes),
                " free: ", room.source, ")");
  fail("the memory plan does not fit: a process of this run needs about ", mib(needed), " at its peak (the plan's ",
       mib(plan.total() + (eval.B > 0 ? plan.evaluation : 0)), " for batches of ", B, " x ", T,
       eval.B > 0 ? cat(" and evaluation batches of ", eval.B) : std::string(),
       gpu ? std::string() : cat(", and ", mib(held_before_training_), " of code, libraries and data"),
       "), but it may take about ", mib(limit), where, ". ",
       fits.empty() ? std::string("No smaller batch, activation checkpointing or sharding fits either: use a "
                                  "machine with more memory, or more ranks with tensor or pipeline parallelism.")
                    : "Settings that fit: " + [&] {
                        std::string s;
                        for (const auto& f : fits) s += (s.empty() ? "" : "; or ") + f;
                        return s;
                      }() + ".",
       " To train anyway, set STRATA_SKIP_MEMORY_CHECK=1.");
}

}  // namespace strata
