#!/usr/bin/env bash
# strata report's HTML in a real browser: headless Chromium (Debian's chromium) opens the
# report of a tiny training run and of a study, with every network lookup failing (the pages
# must need nothing from outside), dumps the DOM it built and renders a PNG. The DOM must hold
# every chart's <svg> with gnuplot's drawing in it, and the PNG must be far more than a blank
# page. Exits 77 (skipped) only where chromium is not installed.
#   browser.sh STRATA_BINARY SOURCE_DIR
set -euo pipefail
STRATA=${1:?usage: browser.sh STRATA_BINARY SOURCE_DIR}
SRC=${2:?}
source "$SRC/tests/jobs/tiny_training.sh"
BROWSER=$(command -v chromium || command -v chromium-browser || true)
[[ -n $BROWSER ]] || { echo "SKIP: chromium is not installed (scripts/install_deps.sh installs it)"; exit 77; }
WORK=$(mktemp -d)
trap '[[ -n "${KEEP:-}" ]] || rm -rf "$WORK"' EXIT
echo "work dir: $WORK"

# A training run with TensorBoard curves (throughput over time) and evaluations (metrics over steps).
tiny_training "$WORK" 24 8
sed -i '/^save_\|^logging_steps/d' "$WORK/train.yaml"
printf 'validation_file: %s\neval_strategy: steps\neval_steps: 8\nlogging_steps: 4\nsave_strategy: "no"\nreport_to: [tensorboard]\n' \
  "$WORK/train.csv" >> "$WORK/train.yaml"
"$STRATA" train "$WORK/train.yaml" > "$WORK/train.log" 2>&1 || { tail -20 "$WORK/train.log"; fail "training failed"; }
"$STRATA" report "$WORK/out" || fail "strata report of the run failed"

# A study directory: what strata study leaves (study.json, results.json), three cells.
mkdir -p "$WORK/study"
python3 - "$WORK/study" <<'PY'
import json, sys
d = sys.argv[1]
json.dump({"study": "browser", "fingerprint": "0", "source": "study.yaml"}, open(d + "/study.json", "w"))
cells = []
for i, (w, sps, t, f1, scale) in enumerate([(1, 10.0, 100.0, 0.90, "none"), (2, 18.0, 56.0, 0.88, "none"),
                                             (2, 18.5, 55.0, 0.91, "sqrt")]):
    cells.append({"cell": f"c{i}", "label": f"ranks {w}, lr_scaling {scale}", "group": f"lr_scaling {scale}",
                  "cluster": "local", "instance_type": "local.c2", "instance_count": 1, "ranks_per_host": w,
                  "world_size": w, "per_device_batch": 8, "global_batch": 8 * w, "dataloader_num_workers": 0,
                  "lr_scaling": scale, "learning_rate": 1e-3, "max_steps": 100 // w, "samples": 800,
                  "repeats_done": 1, "status": "completed", "train_s": t, "train_s_min": t, "train_s_max": t,
                  "samples_per_s": sps, "scaling_efficiency": sps / (w * 10.0), "eval_f1": f1,
                  "peak_rss_mib": 300, "billable_s": t + 4, "cost_usd": (t + 4) * 0.115 / 3600, "runs": []})
json.dump({"study": "browser", "note": "Every cell trains on the same number of samples, 800.",
           "budget": {"samples": 800, "max_steps": 0}, "reference_global_batch": 8, "repeats": 1,
           "cells": cells, "skipped": [{"cell": "c9", "label": "layout {tensor_parallel_degree: 3}",
                                        "reason": "tensor_parallel_degree 3 does not divide 2 ranks"}]},
          open(d + "/results.json", "w"))
PY
"$STRATA" report "$WORK/study" || fail "strata report of the study failed"
grep -q "^cell,cluster" "$WORK/study/results.csv" || fail "no results.csv beside the study report"

OFFLINE=(--headless --no-sandbox --disable-gpu --hide-scrollbars --host-resolver-rules="MAP * ~NOTFOUND"
         --window-size=1280,3000)
echo '<!DOCTYPE html><html><body></body></html>' > "$WORK/blank.html"
timeout 120 "$BROWSER" "${OFFLINE[@]}" --screenshot="$WORK/blank.png" "file://$WORK/blank.html" > /dev/null 2>&1 ||
  fail "chromium could not render a blank page"
check() {  # HTML_FILE MIN_CHARTS
  local html=$1 want=$2 dom=$1.dom png=$1.png
  timeout 120 "$BROWSER" "${OFFLINE[@]}" --dump-dom "file://$html" > "$dom" 2> "$dom.err" ||
    { tail "$dom.err"; fail "chromium could not load $html"; }
  local svgs paths
  svgs=$(grep -o "<svg" "$dom" | wc -l)
  paths=$(grep -o "<path" "$dom" | wc -l)
  [[ $svgs -ge $want ]] || fail "$html: the browser's DOM has $svgs <svg> charts, expected at least $want"
  [[ $paths -ge $((want * 5)) ]] || fail "$html: only $paths <path> elements: the charts are empty"
  timeout 120 "$BROWSER" "${OFFLINE[@]}" --screenshot="$png" "file://$html" > /dev/null 2>&1 || fail "no screenshot of $html"
  python3 - "$png" "$WORK/blank.png" <<'PY'
import struct, sys
def png(path):
    b = open(path, "rb").read()
    assert b[:8] == b"\x89PNG\r\n\x1a\n", path + " is not a PNG"
    w, h = struct.unpack(">II", b[16:24])
    return len(b), w, h
size, w, h = png(sys.argv[1])
blank, _, _ = png(sys.argv[2])
print(f"{sys.argv[1]}: {w}x{h}, {size} bytes (a blank page: {blank} bytes)")
assert size > 4 * blank, "the screenshot is hardly more than a blank page"
PY
  echo "$html: $svgs charts, $paths paths in the browser's DOM"
}
check "$WORK/out/report.html" 4
check "$WORK/study/report.html" 5
echo PASS
