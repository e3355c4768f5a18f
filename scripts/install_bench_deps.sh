#!/usr/bin/env bash
# Installs what the benchmarks, the HF oracle (tools/hf/) and the fixture generators need on
# top of install_deps.sh. Building, running and testing strata need none of it.
#  - Debian: python3-venv (for the environment below), the GEMM libraries compared in
#    bench/gemm_libs (docs/gemm.md), OpenBLAS's OpenMP build and GNU time for peak-RSS figures.
#  - PyPI: the current PyTorch, transformers, accelerate, tokenizers & co. (and rouge-score,
#    nltk, sacrebleu for the seq2seq metrics fixtures), pinned in
#    scripts/bench_requirements.txt (and every transitive package in bench_constraints.txt),
#    into the virtual environment $STRATA_BENCH_VENV (default .venv-bench in the checkout).
#    PyPI's Linux torch wheel is the CUDA build: about 5.8 GiB with its NVIDIA libraries
#    (docs/install.md); the CPU-only wheels live on an index our machines do not reach.
# The Debian part runs as root or through sudo. Safe to re-run. --print lists the Debian packages only.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PKGS=(
  # the virtual environment
  python3-venv
  # GEMM libraries measured against the one strata links
  libblis-dev libblis4-openmp libopenblas0-openmp libomp-dev
  # peak-RSS measurement
  time
)
source "$HERE/apt_packages.sh"
apt_packages "$@"
[[ ${1:-} == --print ]] && exit 0

VENV=$("$HERE/bench_python.sh" --venv)
if [[ ! -x $VENV/bin/python ]]; then
  /usr/bin/python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  -r "$HERE/bench_requirements.txt" -c "$HERE/bench_constraints.txt"
"$VENV/bin/python" - <<'PY'
import accelerate, tokenizers, torch, transformers
print(f"install_bench_deps.sh: torch {torch.__version__}, transformers {transformers.__version__}, "
      f"accelerate {accelerate.__version__}, tokenizers {tokenizers.__version__}")
PY
echo "install_bench_deps.sh: environment $VENV ($(du -sh "$VENV" | cut -f1))"
