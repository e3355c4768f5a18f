#!/usr/bin/env bash
# The Python API's cost over the command line (issue: at most 2% more wall time): the same
# job (default: the README's spam demo) through `strata train CONFIG` and through
# bench/python_overhead.py (strata.Trainer), alternating, RUNS times each; prints every wall
# time, the medians and their ratio. With --compute-metrics the script also computes a
# metric in Python at every evaluation. Run from the repository root on a quiet machine.
#   bench/python_overhead.sh [CONFIG] [--compute-metrics]      RUNS=3 by default
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=${1:-examples/spam/demo.yaml}
EXTRA=${2:-}
RUNS=${RUNS:-3}
PYTHON=$(test -x .venv/bin/python && echo .venv/bin/python || echo python3)
WORK=out/bench-python-overhead
mkdir -p "$WORK"
if pgrep -x cc1plus >/dev/null; then echo "warning: a compiler is running; the times will be noisy" >&2; fi
wall() {  # COMMAND...: runs it quietly, prints its wall seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$@" > "$WORK/last.log" 2>&1 || { tail -20 "$WORK/last.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.2f}')"
}
cli=() py=()
for ((i = 1; i <= RUNS; i++)); do
  cli+=("$(wall build/strata train "$CONFIG" --output_dir "$WORK/cli" --overwrite_output_dir true)")
  py+=("$(wall env PYTHONPATH=build/python "$PYTHON" bench/python_overhead.py "$CONFIG" "$WORK/py" $EXTRA)")
  echo "run $i: cli ${cli[-1]} s, python ${py[-1]} s"
done
python3 - "${cli[*]}" "${py[*]}" <<'PY'
import statistics, sys
cli, py = ([float(x) for x in a.split()] for a in sys.argv[1:3])
c, p = statistics.median(cli), statistics.median(py)
print(f"median wall: cli {c:.2f} s, python {p:.2f} s, python/cli {p / c:.4f} ({(p / c - 1) * 100:+.2f}%)")
PY
