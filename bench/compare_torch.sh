#!/bin/bash
# Side by side, in one run on one machine: strata's training step (bench_train_step) and
# PyTorch eager running Hugging Face's own model code (torch_peer.sh), same architectures,
# batches, sequence length, dropout and optimizer, 2 threads each. Prints one table with the
# ratio strata/PyTorch and writes both JSONs plus compare.json to OUTDIR.
#
#   bench/compare_torch.sh BUILD_DIR OUTDIR TRANSFORMERS_GITDIR HUB_GITDIR
#   e.g. bench/compare_torch.sh build bench/results \
#          /work/.mirror/tianhua2+huggingface_llama3/repo /work/.mirror/huggingface+huggingface_hub/repo
# The two git dirs are the oracle's sources (tests/fixtures/make_fixtures.sh says how to get them).
set -euo pipefail
BUILD=${1:?usage: compare_torch.sh BUILD_DIR OUTDIR TRANSFORMERS_GITDIR HUB_GITDIR}
OUT=${2:?}
TF=${3:?}
HUB=${4:?}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/strata" "$OUT/torch"
THREADS=${THREADS:-2}
echo "== strata (bench_train_step, $THREADS threads)"
"$BUILD/bench/bench_train_step" --threads "$THREADS" --steps "${STEPS:-5}" --json "$OUT/strata/train_step.json"
echo "== PyTorch eager + HF Transformers ($THREADS threads)"
THREADS=$THREADS "$HERE/torch_peer.sh" "$TF" "$HUB" "$OUT/torch"
/usr/bin/python3 - "$OUT" <<'PYEOF'
import json, os, re, sys
out = sys.argv[1]
s = json.load(open(os.path.join(out, "strata", "train_step.json")))
pairs = {"distilbert-base b8": "distilbert-b8-train", "distilbert-base b32": "distilbert-b32-train",
         "bert-base b8": "bert-b8-train"}
rows = []
print(f"\nmachine: {s['machine']}; strata GEMM ceiling {s['gemm_ceiling_gflops']:.0f} GFLOP/s")
print(f"{'config':22s} {'strata ms':>10s} {'torch ms':>10s} {'speedup':>8s} {'strata GF/s':>12s} "
      f"{'torch GF/s':>11s} {'x ceiling':>10s} {'strata RSS':>11s} {'torch RSS':>10s}")
for c in s["configs"]:
    t = json.load(open(os.path.join(out, "torch", pairs[c["name"]] + ".json")))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)",
                        open(os.path.join(out, "torch", pairs[c["name"]] + ".time")).read()).group(1)) / 1024
    sm, tm = c["ms_per_step"]["median"], t["ms_per_step"]["median"]
    row = {"config": c["name"], "strata_ms": sm, "torch_ms": tm, "speedup": tm / sm,
           "strata_gflops": c["gflops_per_s"], "torch_gflops": t["gflops_per_s_brief"]["median"],
           "strata_ratio_to_ceiling": c["ratio_to_gemm_ceiling"], "strata_rss_mib": c["peak_rss_mib"],
           "torch_rss_mib": rss}
    rows.append(row)
    print(f"{c['name']:22s} {sm:10.0f} {tm:10.0f} {tm / sm:8.2f} {row['strata_gflops']:12.1f} "
          f"{row['torch_gflops']:11.1f} {row['strata_ratio_to_ceiling']:10.2f} {row['strata_rss_mib']:11.0f} {rss:10.0f}")
json.dump({"machine": s["machine"], "rows": rows}, open(os.path.join(out, "compare.json"), "w"), indent=1)
PYEOF
