#!/usr/bin/env bash
# The main job on bundled data (examples/spam/demo.yaml): train a 2-layer BERT from random initialisation
# to classify the SpamAssassin corpus, on 2 threads, then evaluate and predict. Prints the
# validation and test metrics, the wall time of the whole job and the time to the first
# evaluation with F1 >= 0.95; the model, checkpoints, logs and predictions land in out/spam.
set -euo pipefail
shopt -s lastpipe  # the loop below runs in this shell, so what it records stays
cd "$(dirname "$0")/.."
STRATA=${STRATA:-build/strata}
seconds_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }'; }
start=$(date +%s.%N)
first_good=""
# strata flushes every log line, so a line arrives when its evaluation has ended.
"$STRATA" train examples/spam/demo.yaml "$@" | while IFS= read -r line; do
  printf '%s\n' "$line"
  if [[ -z $first_good && $line =~ \"eval_f1\":([0-9.eE+-]+) ]] &&
     awk -v f="${BASH_REMATCH[1]}" 'BEGIN { exit !(f >= 0.95) }'; then
    first_good=$(seconds_since "$start")
  fi
done
echo "demo: wall time $(seconds_since "$start") s; first validation F1 >= 0.95 after ${first_good:-(never)}${first_good:+ s}"
