#!/usr/bin/env bash
# Optimizer-state (and gradient) bytes per rank against the data-parallel degree and the ZeRO
# stage, measured against the plan, on GPT-2 124M (bench/zero/gpt2_zero.yaml: 1 x 64 tokens
# per rank, AdamW, 3 steps, 1 thread per rank). Each row is one `strata train` run under
# mpirun; the plan is what the job prints at its start (train/memory_plan.h), the measurement
# what it prints at its end: resident bytes of the optimizer's state buffers and the most
# gradient bytes resident at once (mincore), and the peak RSS (VmHWM) of the largest rank.
#   bench/zero_memory.sh [--ranks "1 2 4"] [--stages "0 1 2"]
set -euo pipefail
cd "$(dirname "$0")/.."
RANKS="1 2 4"
STAGES="0 1 2"
while (($#)); do
  case $1 in
    --ranks) RANKS=$2; shift 2 ;;
    --stages) STAGES=$2; shift 2 ;;
    *) echo "usage: bench/zero_memory.sh [--ranks \"1 2 4\"] [--stages \"0 1 2\"]" >&2; exit 2 ;;
  esac
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
LOGS=out/bench_zero/logs
mkdir -p "$LOGS"
# sed reads to the end: head would stop zcat with SIGPIPE, which pipefail turns into an exit
zcat examples/corpus/pretrain.txt.gz | sed -n '1,400p' > out/bench_zero/train.txt
if pgrep -x cc1plus > /dev/null || pgrep -x ninja > /dev/null; then
  echo "# warning: a compiler is running; the peak RSS is unaffected, step times are not comparable" >&2
fi

for n in $RANKS; do
  for stage in $STAGES; do
    if ((n == 1 && stage > 0)); then continue; fi  # one rank: nothing to shard
    log=$LOGS/dp${n}_zero${stage}.log
    start=$(date +%s.%N)
    mpirun --oversubscribe -np "$n" -x OMP_NUM_THREADS=1 build/strata train bench/zero/gpt2_zero.yaml \
      --set zero_stage="$stage" > "$log" 2>&1 || { echo "FAILED: dp $n stage $stage (see $log)" >&2; exit 1; }
    echo "wall_s $(echo "$(date +%s.%N) - $start" | bc)" >> "$log"
  done
done

python3 - "$LOGS" "$RANKS" "$STAGES" <<'PY'
import os, re, sys
logs, ranks, stages = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
def mib(text, label):
    m = re.search(rf"^  {label} +([0-9.]+) MiB", text, re.M)
    return float(m.group(1)) if m else float("nan")
rows, base_opt = [], None
for n in ranks:
    for stage in stages:
        if n == "1" and stage != "0": continue
        text = open(f"{logs}/dp{n}_zero{stage}.log").read()
        measured = [tuple(map(float, m)) for m in re.findall(
            r"memory measured, rank \d+: peak RSS ([0-9.]+) MiB; gradients resident at most ([0-9.]+) MiB; "
            r"optimizer state ([0-9.]+) MiB", text)]
        assert len(measured) == int(n), f"dp {n} stage {stage}: {len(measured)} measured lines"
        opt_plan = mib(text, "optimizer state")
        grad_plan = mib(text, "gradients")
        kept = mib(text, "  kept") if "    kept" in text else grad_plan
        opt = max(m[2] for m in measured)
        if base_opt is None: base_opt = opt
        wall = float(re.search(r"^wall_s ([0-9.]+)", text, re.M).group(1))
        rows.append((n, stage, opt_plan, opt, base_opt / opt, kept, grad_plan, max(m[1] for m in measured),
                     max(m[0] for m in measured), wall))
print("# ZeRO memory per rank: GPT-2 124M (124.4M parameters), fp32 AdamW, batch 1 x 64 per rank, 3 steps,")
print("# ddp_bucket_cap_mb 25; plan = printed at the job's start, measured = resident (mincore) / VmHWM, max over ranks")
print(f"{'dp':>3} {'stage':>5} | {'optimizer MiB plan':>18} {'measured':>9} {'1/x':>5} | "
      f"{'grads MiB kept':>14} {'peak plan':>9} {'measured':>9} | {'peak RSS MiB':>12} | {'wall s':>6}")
for r in rows:
    print(f"{r[0]:>3} {r[1]:>5} | {r[2]:18.1f} {r[3]:9.1f} {r[4]:5.2f} | {r[5]:14.1f} {r[6]:9.1f} {r[7]:9.1f} | "
          f"{r[8]:12.1f} | {r[9]:6.1f}")
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
mem = next((l.split(":", 1)[1].strip() for l in open("/proc/meminfo") if l.startswith("MemTotal")), "?")
print(f"# machine: {cpu}, {os.cpu_count()} cpus, {mem}; ranks share the machine (mpirun --oversubscribe)")
PY
