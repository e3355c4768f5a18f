#!/usr/bin/env bash
# One command for a fresh Debian 12 machine: install the Debian packages strata needs,
# build it (Release, Ninja), install the Python package into .venv (`pip install .`: the
# module and the command line, mostly from ccache after the build), and run the main job on
# bundled data.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
.venv/bin/pip install --quiet --disable-pip-version-check .
./scripts/demo.sh
