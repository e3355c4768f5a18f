#!/usr/bin/env bash
# Runs a GPU test under compute-sanitizer's memcheck: out-of-bounds and misaligned accesses,
# and CUDA API errors, fail it. Exit 77 (skipped) where compute-sanitizer is not installed;
# the test itself exits 77 where there is no GPU, and compute-sanitizer passes that through.
#   memcheck.sh BINARY [ARGS...]
set -u
sanitizer=$(command -v compute-sanitizer || true)
for dir in "${CUDA_HOME:-}" /usr/local/cuda; do
  if [ -z "$sanitizer" ] && [ -n "$dir" ] && [ -x "$dir/bin/compute-sanitizer" ]; then sanitizer="$dir/bin/compute-sanitizer"; fi
done
if [ -z "$sanitizer" ]; then
  echo "memcheck.sh: skipped: compute-sanitizer not found (PATH, \$CUDA_HOME/bin, /usr/local/cuda/bin)"
  exit 77
fi
exec "$sanitizer" --tool memcheck --error-exitcode 1 --print-limit 20 "$@"
