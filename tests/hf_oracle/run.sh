#!/usr/bin/env bash
# Runs a check of tests/hf_oracle/ under HF's own code: the benchmark environment of
# scripts/install_bench_deps.sh (torch, transformers and huggingface_hub from PyPI; the
# folder is $STRATA_BENCH_VENV, default .venv-bench in the checkout).
# Where that environment is not set up, says so and exits 77, which CTest reports as skipped.
#   run.sh SCRIPT.py STRATA_BINARY SOURCE_DIR
set -euo pipefail
SCRIPT=${1:?usage: run.sh SCRIPT.py STRATA_BINARY SOURCE_DIR}
STRATA=${2:?}
SRC=${3:?}
if ! PY=$("$SRC/scripts/bench_python.sh" 2>/dev/null) || ! "$PY" -c "import torch, yaml, transformers" 2>/dev/null; then
  echo "skipped: no benchmark environment with torch and transformers (scripts/install_bench_deps.sh makes it)"
  exit 77
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# Offline: TrainingSummary would otherwise ask the Hub for the base model's license.
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$PY" "$SCRIPT" "$STRATA" "$SRC" "$WORK"
