#!/usr/bin/env bash
# Runs a job that must fail and checks how: a non-zero exit status, within MAX_SECONDS, with
# every PATTERN (an extended regular expression) somewhere in its combined output.
#   expect_failure.sh MAX_SECONDS PATTERN... -- COMMAND...
set -uo pipefail
max=${1:?usage: expect_failure.sh MAX_SECONDS PATTERN... -- COMMAND...}
shift
patterns=()
while (($#)) && [[ $1 != -- ]]; do
  patterns+=("$1")
  shift
done
shift || { echo "expect_failure.sh: no -- COMMAND" >&2; exit 2; }

out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s.%N)
# The command's own limit is twice ours, so a hang is reported here rather than by CTest.
timeout --kill-after=5 $((2 * max)) "$@" >"$out" 2>&1
status=$?
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
cat "$out"
echo "---- exit status $status after ${elapsed} s (limit ${max} s)"

ok=1
if ((status == 0)); then echo "FAIL: the job exited 0"; ok=0; fi
if (($(echo "$elapsed >= $max" | bc))); then echo "FAIL: took ${elapsed} s, limit ${max} s"; ok=0; fi
for p in "${patterns[@]}"; do
  if grep -Eq -- "$p" "$out"; then echo "found: $p"; else echo "FAIL: output lacks: $p"; ok=0; fi
done
((ok)) && echo "PASS" && exit 0
exit 1
