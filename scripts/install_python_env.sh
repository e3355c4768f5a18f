#!/usr/bin/env bash
# The repository's Python environment, .venv: Debian's python3 with its packages (numpy,
# pytest: scripts/install_deps.sh) plus, from PyPI, `datasets` (the Python package's tests
# hand a datasets.Dataset to the Trainer) and a numpy new enough for the pyarrow it pulls.
# `pip install .` installs strata itself into it (scripts/bootstrap.sh). Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -x .venv/bin/python ]]; then
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
if ! .venv/bin/python -c "import datasets" 2>/dev/null; then
  .venv/bin/pip install --quiet --disable-pip-version-check "datasets>=3" "numpy>=2"
fi
echo "$(basename "$0"): .venv has $(.venv/bin/python -c 'import datasets, numpy; print(f"datasets {datasets.__version__}, numpy {numpy.__version__}")')"
