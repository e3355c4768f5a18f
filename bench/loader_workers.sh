#!/usr/bin/env bash
# Training throughput against dataloader_num_workers (0 = tokenize and collate on the training
# thread; k > 0 = k background workers) on the spam job cut short (bench/dp/spam_short.yaml:
# examples/spam/bert-small, batch 32, max_seq_length 128, no eval, no checkpoints).
#
#   bench/loader_workers.sh [--steps S] [--workers "0 1 2"] [--threads T] [-- --set key=value ...]
#
# ms/step is the steady state from timestamped per-step log lines (step 1 left out);
# samples/s = 32 / (s/step); tokens/s is train_tokens_per_second from train_results.json
# (it includes step 1 and start-up of the loop).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
STEPS=30
WORKERS="0 1 2"
THREADS=2
EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) STEPS=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "loader_workers.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -x build/strata ]] || { echo "loader_workers.sh: build/strata is missing" >&2; exit 1; }
if pgrep -x cc1plus >/dev/null || pgrep -x ninja >/dev/null; then
  echo "loader_workers.sh: warning: a compiler is running; the numbers will be low" >&2
fi
CONFIG=bench/dp/spam_short.yaml
WORK=$(mktemp -d /tmp/strata_loader.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

measure() {  # LOGFILE -> "steps ms_per_step"
  awk '/^[0-9.]+ \{.*"grad_norm":.*"step":/ { if (match($0, /"step":[0-9]+/)) { s = substr($0, RSTART + 7, RLENGTH - 7) + 0;
         t[s] = $1; if (first == "" || s < first) first = s; if (s > last) last = s } }
       END { if (last > first) printf "%d %.1f\n", last - first, 1000 * (t[last] - t[first]) / (last - first);
             else print "0 nan" }' "$1"
}

ROWS=()
for w in $WORKERS; do
  out=out/bench_loader/w$w
  cmd=(build/strata train "$CONFIG" --set model_name_or_path=examples/spam/bert-small --set max_steps="$STEPS"
       --set num_threads="$THREADS" --set dataloader_num_workers="$w" --set output_dir="$out" "${EXTRA[@]}")
  echo "== ${cmd[*]}"
  set +e
  "${cmd[@]}" 2>&1 | while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done > "$WORK/w$w.log"
  rc=${PIPESTATUS[0]}
  set -e
  if [[ $rc != 0 ]]; then echo "   FAILED (rc $rc):"; tail -n 15 "$WORK/w$w.log" | cut -d' ' -f2- | sed 's/^/   | /'; exit 1; fi
  grep -E 'train_runtime' "$WORK/w$w.log" | cut -d' ' -f2- | sed 's/^/   | /'
  read -r n ms <<< "$(measure "$WORK/w$w.log")"
  ROWS+=("$(python3 -c "
import json; r = json.load(open('$out/train_results.json'))
print(f\"{$w:>7} {$ms:10.1f} {32 * 1000 / $ms:12.1f} {r['train_tokens_per_second']:>14} {r['train_runtime']:>14}\")")")
done
echo
echo "machine: $(lscpu | awk -F': *' '/^Model name/ {print $2; exit}'), $(nproc) cores; examples/spam/bert-small, batch 32, max_seq_length 128, num_threads $THREADS, $STEPS steps"
printf '%7s %10s %12s %14s %14s\n' workers ms/step samples/s train_tok/s train_runtime_s
printf '%s\n' "${ROWS[@]}"
