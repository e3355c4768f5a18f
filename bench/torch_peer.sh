#!/bin/bash
# torch_peer.sh -- PyTorch peer numbers (eager, and torch.compile) for strata's throughput benchmarks.
#
# Times full training steps (forward in train() with HF's default dropout, loss.backward(),
# torch AdamW step, zero_grad) of Hugging Face Transformers' own model code on CPU, in the
# benchmark environment (scripts/install_bench_deps.sh: torch 2.15.0 with its MKL and oneDNN,
# transformers 5.24.0, from PyPI), via the oracle's tools/hf/hf_throughput.py, 2 threads. Each
# config runs under /usr/bin/time -v for the process's peak RSS.
#
# Usage:
#   bench/torch_peer.sh OUTDIR        e.g. bench/torch_peer.sh bench/results/torch
# Env: THREADS (default 2), ONLY (see Configs), COMPILE (0: eager only; 1, the default: each config
# also as <name>-compiled, the model wrapped in torch.compile with inductor's default mode, two more
# warmup steps since the first compiles), AUTOCAST (bf16: every config under torch.autocast("cpu",
# dtype=torch.bfloat16), named <name>-bf16 and <name>-bf16-compiled). The peer capped like strata's AVX2 runs:
#   ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 bench/torch_peer.sh OUTDIR
#
# Configs (random ids, no padding, train mode, HF's default dropout 0.1):
#   distilbert-b8-train   distilbert-base-uncased, seq-cls (2 labels), batch 8,  seq 128; warmup 3, 10 timed steps
#   distilbert-b32-train  distilbert-base-uncased, seq-cls (2 labels), batch 32, seq 128; warmup 2,  5 timed steps
#   bert-b8-train         bert-base-uncased,       seq-cls (2 labels), batch 8,  seq 128; warmup 2,  8 timed steps
#   gpt2-b4-t256-train    gpt2 (124M) GPT2LMHeadModel, labels = ids,   batch 4,  seq 256; warmup 2,  5 timed steps
#   gpt2-b4-t64-train     gpt2 (124M) GPT2LMHeadModel, labels = ids,   batch 4,  seq 64;  warmup 3,  8 timed steps
# ONLY=distilbert|bert|gpt2 runs that family's configs alone (default: all).
# Writes OUTDIR/<name>.json (hf_throughput.py's JSON: per-step times, FLOP counts, versions),
# OUTDIR/<name>.time (/usr/bin/time -v), OUTDIR/<name>.log, and OUTDIR/summary.json; prints one
# line per config and mode: median ms/step, samples/s, GFLOP/s (flops_brief and flops_total), peak RSS MiB.
# GFLOP/s use hf_throughput.py's counts: brief = 6*N_nonemb*B*T + 12*L*H*T^2*B; total adds the LM
# head, 6*V*H*B*T (0 for seq-cls, so both agree there; GPT-2's tied head is not in N_nonemb).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
ORACLE=$REPO/tools/hf
PY=$("$REPO/scripts/bench_python.sh")
OUT=${1:?usage: $0 OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
THREADS=${THREADS:-2}
export OMP_NUM_THREADS=$THREADS

ONLY=${ONLY:-}
COMPILE=${COMPILE:-1}
run() {  # name, family, hf_throughput args...: eager, then compiled unless COMPILE=0
  local name=$1 family=$2; shift 2
  [[ -z "$ONLY" || "$ONLY" == "$family" ]] || return 0
  run_one "$name" "$@"
  if [[ "$COMPILE" != 0 ]]; then
    local args=("$@") i
    for i in "${!args[@]}"; do  # the compiling step and recompiles count as warmup
      [[ "${args[$i]}" == --warmup ]] && args[$((i + 1))]=$(( args[i + 1] + 2 ))
    done
    # a compile failure is PyTorch's (docs/benchmarks.md has the one seen); the eager row stands
    run_one "$name-compiled" "${args[@]}" --compile || echo "$name-compiled: left out" >&2
  fi
}
run_one() {  # name, hf_throughput args...
  local name=$1; shift
  if [[ -n "${AUTOCAST:-}" ]]; then
    name=${name/-train/-train-$AUTOCAST}
    set -- "$@" --autocast "$AUTOCAST"
  fi
  /usr/bin/time -v -o "$OUT/$name.time" "$PY" "$ORACLE/hf_throughput.py" "$@" \
      --threads "$THREADS" --json-out "$OUT/$name.json" > "$OUT/$name.log" 2>&1 \
    || { echo "$name: FAILED, see $OUT/$name.log" >&2; tail -5 "$OUT/$name.log" >&2; return 1; }
  /usr/bin/python3 - "$OUT" "$name" <<'PYEOF'
import json, os, re, sys
out, name = sys.argv[1], sys.argv[2]
r = json.load(open(os.path.join(out, name + ".json")))
rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)",
                       open(os.path.join(out, name + ".time")).read()).group(1))
row = {"name": name, "arch": r["arch"], "task": r["task"], "size": r["size"], "mode": r["mode"],
       "batch": r["batch"], "seq": r["seq"], "threads": r["torch_threads"], "warmup": r["warmup"],
       "steps": r["steps"], "ms_per_step_median": r["ms_per_step"]["median"],
       "ms_per_step_min": r["ms_per_step"]["min"], "ms_per_step_max": r["ms_per_step"]["max"],
       "samples_per_s": r["samples_per_s"]["median"], "tokens_per_s": r["tokens_per_s"]["median"],
       "gflops_per_s_brief": r["gflops_per_s_brief"]["median"],
       "gflops_per_s_total": r["gflops_per_s_total"]["median"],
       "flops_brief": r["flops"]["flops_brief"], "flops_total": r["flops"]["flops_total"],
       "peak_rss_mib": rss_kb / 1024, "torch": r["torch"], "transformers": r["transformers"],
       "cpu_capability": r["cpu_capability"], "compiled": r["compiled"], "compile_s": r["compile_s"],
       "autocast": r.get("autocast")}
summ = os.path.join(out, "summary.json")
rows = json.load(open(summ)) if os.path.exists(summ) else []
rows = [x for x in rows if x["name"] != name] + [row]
with open(summ, "w") as f:
    json.dump(rows, f, indent=1)
print(f"{name:31s} {row['ms_per_step_median']:9.1f} ms/step (median of {row['steps']}; "
      f"min {row['ms_per_step_min']:.1f} max {row['ms_per_step_max']:.1f})  "
      f"{row['samples_per_s']:7.2f} samples/s  {row['tokens_per_s']:7.1f} tokens/s  {row['gflops_per_s_brief']:6.1f} GFLOP/s brief  "
      f"{row['gflops_per_s_total']:6.1f} GFLOP/s total  peak RSS {row['peak_rss_mib']:7.1f} MiB", flush=True)
PYEOF
}

echo "torch peer: $(nproc) cores, threads=$THREADS, load: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -f "$OUT/summary.json"
run distilbert-b8-train  distilbert --arch distilbert --task seq-cls   --size base --batch 8  --seq 128 --warmup 3 --steps 10
run distilbert-b32-train distilbert --arch distilbert --task seq-cls   --size base --batch 32 --seq 128 --warmup 2 --steps 5
run bert-b8-train        bert       --arch bert       --task seq-cls   --size base --batch 8  --seq 128 --warmup 2 --steps 8
run gpt2-b4-t256-train   gpt2       --arch gpt2       --task causal-lm --size base --batch 4  --seq 256 --warmup 2 --steps 5
run gpt2-b4-t64-train    gpt2       --arch gpt2       --task causal-lm --size base --batch 4  --seq 64  --warmup 3 --steps 8
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
