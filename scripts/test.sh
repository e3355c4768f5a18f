#!/usr/bin/env bash
# Builds (if needed) and runs the whole test suite through CTest. Exits non-zero if any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f build/build.ninja ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build build
OMP_NUM_THREADS=2 ctest --test-dir build --output-on-failure -j2 --timeout 600
