#!/usr/bin/env bash
# The Python of the benchmark environment that scripts/install_bench_deps.sh makes: prints its
# path, or with --venv the environment's folder. Scripts that run PyTorch or transformers call
#   PY=$(scripts/bench_python.sh)
# which fails with the command to run when the environment is not there.
set -euo pipefail
VENV=${STRATA_BENCH_VENV:-$(cd "$(dirname "$0")/.." && pwd)/.venv-bench}
if [[ ${1:-} == --venv ]]; then
  echo "$VENV"
  exit 0
fi
if [[ ! -x $VENV/bin/python ]]; then
  echo "bench_python.sh: no benchmark environment at $VENV; run scripts/install_bench_deps.sh first" >&2
  exit 1
fi
echo "$VENV/bin/python"
