#!/usr/bin/env bash
# Data-parallel scaling on this machine: DistilBERT-base shape (bench/dp/distilbert-base,
# random init) on the spam training set, every batch 32 x 128 per rank
# (bench/dp/distilbert_spam.yaml), 1 rank x 1 thread against 2 ranks x 1 thread (mpirun -np 2).
#
#   bench/dp_scaling.sh [--steps S] [--ranks "1 2"] [--mpi-args "..."] [-- --set key=value ...]
#
# Time per step is the steady state: every output line is timestamped as it arrives (one log
# line per step, logging_steps 1, flushed), and ms/step is (t(last step) - t(step 1)) /
# (steps - 1), so start-up and the first step are left out. Throughput is global:
# ranks x 32 samples (x 128 tokens) per step. Efficiency = T(n) / (n * T(1)).
# ddp_comm_hidden_fraction is read from train_results.json (1 - waited / communication time).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
STEPS=5
RANKS="1 2"
MPI_ARGS=""
EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) STEPS=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    --mpi-args) MPI_ARGS=$2; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "dp_scaling.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -x build/strata ]] || { echo "dp_scaling.sh: build/strata is missing (cd build && cmake .. && ninja strata)" >&2; exit 1; }
if pgrep -x cc1plus >/dev/null || pgrep -x ninja >/dev/null; then
  echo "dp_scaling.sh: warning: a compiler is running; the numbers will be low" >&2
fi
CONFIG=bench/dp/distilbert_spam.yaml
BATCH=32
SEQ=128
WORK=out/bench_dp/logs   # timestamped output of each run kept here
mkdir -p "$WORK"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

measure() { awk -f bench/steady_ms_per_step.awk "$1"; }  # LOGFILE -> "steps ms_per_step"

declare -A MS HIDDEN RUNTIME
for n in $RANKS; do
  out=out/bench_dp/np$n
  args=(train "$CONFIG" --set num_threads=1 --set max_steps="$STEPS" --set output_dir="$out" "${EXTRA[@]}")
  if [[ $n == 1 ]]; then
    cmd=(build/strata "${args[@]}")
  else
    # shellcheck disable=SC2206
    cmd=(mpirun --oversubscribe --allow-run-as-root -np "$n" $MPI_ARGS -x OMP_NUM_THREADS=1 build/strata "${args[@]}")
  fi
  echo "== $n rank(s) x 1 thread: ${cmd[*]}"
  set +e
  OMP_NUM_THREADS=1 "${cmd[@]}" 2>&1 | while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done > "$WORK/np$n.log"
  rc=${PIPESTATUS[0]}
  set -e
  if [[ $rc != 0 ]]; then
    echo "   FAILED (rc $rc):"; tail -n 15 "$WORK/np$n.log" | cut -d' ' -f2- | sed 's/^/   | /'; exit 1
  fi
  grep -E '"loss"|train_runtime' "$WORK/np$n.log" | cut -d' ' -f2- | sed 's/^/   | /'
  read -r _ ms <<< "$(measure "$WORK/np$n.log")"
  MS[$n]=$ms
  HIDDEN[$n]=$(python3 -c "import json;print(json.load(open('$out/train_results.json')).get('ddp_comm_hidden_fraction','-'))")
  RUNTIME[$n]=$(python3 -c "import json;print(json.load(open('$out/train_results.json'))['train_runtime'])")
done

echo
echo "machine: $(lscpu | awk -F': *' '/^Model name/ {print $2; exit}'), $(nproc) cores, $(free -g | awk '/^Mem/ {print $2}') GiB; DistilBERT-base shape, random init, batch $BATCH x $SEQ per rank, $STEPS steps (steady state over the last $((STEPS - 1)))"
printf '%-16s %10s %12s %12s %8s %11s %12s %14s\n' config ms/step samples/s tokens/s speedup efficiency comm_hidden train_runtime_s
first=${RANKS%% *}
for n in $RANKS; do
  python3 - "$n" "${MS[$n]}" "${MS[$first]}" "$first" "$BATCH" "$SEQ" "${HIDDEN[$n]}" "${RUNTIME[$n]}" <<'EOF'
import sys
n, ms, ms1, n1, b, seq = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
t = n * b * 1000 / ms
t1 = n1 * b * 1000 / ms1
eff = (t / t1) * n1 / n
print(f"{f'{n} rank x 1 thr':<16} {ms:10.1f} {t:12.2f} {t * seq:12.0f} {t / t1:8.3f} {eff:11.3f} {sys.argv[7]:>12} {sys.argv[8]:>14}")
EOF
done
