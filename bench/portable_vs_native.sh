#!/bin/bash
# Training-step time of a portable build (the default: kernels compiled once per ISA, one chosen
# at run time, src/kernels/cpu/isa.h) against a -march=native build, on this machine.
# bench_train_step of each build runs alternately, round by round, the order swapped every
# round (portable first, then native first, ...), so drifting load hits both alike; each run
# gives the median of --steps steps after a warm-up step. Prints the per-round medians, the
# median over rounds of each build and the ratio portable / native, with the load average.
#
#   [THREADS=2] bench/portable_vs_native.sh PORTABLE_BUILD NATIVE_BUILD [ROUNDS] [STEPS] [CONFIG...]
#
# Defaults: 3 rounds, 3 steps, configs "gpt2 b4 t256" and "bert-base b8". THREADS=1 compares
# the code of one core and holds up far better than 2 threads on a loaded machine, where a
# descheduled OpenMP thread stalls every barrier of its partner. A native build:
#   cmake -S . -B build-native -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_NATIVE=ON
#   ninja -C build-native bench_train_step
# Results: docs/benchmarks.md, "Portable build".
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,16p' "$0" >&2
  exit 2
fi
portable=$1 native=$2 rounds=${3:-3} steps=${4:-3}
shift $(( $# < 4 ? $# : 4 ))
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=("gpt2 b4 t256" "bert-base b8")
for b in "$portable" "$native"; do
  [ -x "$b/bench/bench_train_step" ] || { echo "$b/bench/bench_train_step: not built" >&2; exit 2; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "# $(date -u +%FT%TZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores; load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# portable: $portable; native: $native; ${THREADS:-2} thread(s)"
for ((r = 1; r <= rounds; r++)); do
  order=(portable native)
  ((r % 2 == 0)) && order=(native portable)
  for c in "${configs[@]}"; do
    for which in "${order[@]}"; do
      dir=$portable
      [ "$which" = native ] && dir=$native
      f="$out/$which-$r-${c// /_}.json"
      "$dir/bench/bench_train_step" --threads "${THREADS:-2}" --only "$c" --steps "$steps" --warmup 1 --json "$f" \
        > /dev/null
      echo "round $r  $which  $c  $(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["configs"][0]["ms_per_step"]["median"]))' "$f") ms/step  (load $(cut -d' ' -f1 /proc/loadavg))"
    done
  done
done
echo "# load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" "${configs[@]}" <<'PY'
import glob, json, os, statistics, sys
out, configs = sys.argv[1], sys.argv[2:]
print(f"{'config':<16} {'portable ms':>12} {'native ms':>10} {'portable/native':>16} {'per-round ratios':>20}")
for c in configs:
    key = c.replace(' ', '_')
    ms = {w: {} for w in ('portable', 'native')}
    for w in ms:
        for f in glob.glob(os.path.join(out, f"{w}-*-{key}.json")):
            rnd = int(os.path.basename(f).split('-')[1])
            ms[w][rnd] = json.load(open(f))["configs"][0]["ms_per_step"]["median"]
    p, n = statistics.median(ms['portable'].values()), statistics.median(ms['native'].values())
    ratios = ' '.join(f"{ms['portable'][r] / ms['native'][r]:.3f}" for r in sorted(ms['portable']))
    print(f"{c:<16} {p:>12.0f} {n:>10.0f} {p / n:>16.3f} {ratios:>20}")
PY
