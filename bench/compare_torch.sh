#!/bin/bash
# Side by side, in one run on one machine: strata's training step (bench_train_step) and
# PyTorch eager running Hugging Face's own model code (torch_peer.sh), same architectures,
# batches, sequence lengths, dropout and optimizer, 2 threads each; for the GPT-2 rows,
# optionally llm.c's CPU trainer too (llmc_peer.sh). Prints one table with the ratios and
# writes every peer's JSON plus compare.json to OUTDIR.
#
#   bench/compare_torch.sh BUILD_DIR OUTDIR      e.g. bench/compare_torch.sh build bench/results
#   GPT-2 rows only, with llm.c:
#        ONLY=gpt2 LLMC=/work/.mirror/karpathy+llm.c/repo bench/compare_torch.sh build bench/results/gpt2
# The PyTorch side runs in the benchmark environment (scripts/install_bench_deps.sh).
# Env: ONLY=distilbert|bert|gpt2 runs that family's rows alone (default: all); LLMC=an llm.c
# checkout (work tree or git dir) adds llm.c to the GPT-2 rows; THREADS (2); STEPS (strata's
# timed steps, 5).
set -euo pipefail
BUILD=${1:?usage: compare_torch.sh BUILD_DIR OUTDIR}
OUT=${2:?}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/strata" "$OUT/torch"
export THREADS=${THREADS:-2} ONLY=${ONLY:-}
echo "== strata (bench_train_step, $THREADS threads)"
"$BUILD/bench/bench_train_step" --threads "$THREADS" --steps "${STEPS:-5}" ${ONLY:+--only "$ONLY"} \
    --json "$OUT/strata/train_step.json"
echo "== PyTorch eager + HF Transformers ($THREADS threads)"
"$HERE/torch_peer.sh" "$OUT/torch"
rm -rf "$OUT/llmc"
if [[ -n "${LLMC:-}" && ( -z "$ONLY" || "$ONLY" == gpt2 ) ]]; then
  echo "== llm.c train_gpt2.c ($THREADS threads)"
  SHAPES="4x256 4x64" "$HERE/llmc_peer.sh" "$LLMC" "$OUT/llmc"
fi
/usr/bin/python3 - "$OUT" <<'PYEOF'
import json, os, re, sys
out = sys.argv[1]
s = json.load(open(os.path.join(out, "strata", "train_step.json")))
pairs = {"distilbert-base b8": "distilbert-b8-train", "distilbert-base b32": "distilbert-b32-train",
         "bert-base b8": "bert-b8-train", "gpt2 b4 t256": "gpt2-b4-t256-train", "gpt2 b4 t64": "gpt2-b4-t64-train"}
llmc_path = os.path.join(out, "llmc", "summary.json")
llmc = {r["name"].replace("llmc ", "gpt2 "): r for r in json.load(open(llmc_path))} if os.path.exists(llmc_path) else {}
rows = []
print(f"\nmachine: {s['machine']}; strata GEMM ceiling {s['gemm_ceiling_gflops']:.0f} GFLOP/s")
print("GFLOP/s for both count the LM head (hf_throughput.py's flops_total); llm.c columns for GPT-2 only")
print(f"{'config':20s} {'strata ms':>10s} {'torch ms':>9s} {'speedup':>8s} {'strata tok/s':>12s} {'torch tok/s':>11s} "
      f"{'strata GF/s':>11s} {'torch GF/s':>10s} {'x ceiling':>9s} {'strata RSS':>10s} {'torch RSS':>9s} "
      f"{'llm.c tok/s':>11s} {'x llm.c':>7s}")
for c in s["configs"]:
    t = json.load(open(os.path.join(out, "torch", pairs[c["name"]] + ".json")))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)",
                        open(os.path.join(out, "torch", pairs[c["name"]] + ".time")).read()).group(1)) / 1024
    sm, tm = c["ms_per_step"]["median"], t["ms_per_step"]["median"]
    row = {"config": c["name"], "strata_ms": sm, "torch_ms": tm, "speedup": tm / sm,
           "strata_tokens_per_s": c["tokens_per_s"], "torch_tokens_per_s": t["tokens_per_s"]["median"],
           "strata_gflops": c["gflops_per_s"], "torch_gflops": t["gflops_per_s_total"]["median"],
           "strata_ratio_to_ceiling": c["ratio_to_gemm_ceiling"], "strata_rss_mib": c["peak_rss_mib"],
           "torch_rss_mib": rss}
    l = llmc.get(c["name"])
    if l:
        row.update({"llmc_ms": l["ms_per_step"]["median"], "llmc_tokens_per_s": l["tokens_per_s"],
                    "speedup_vs_llmc": c["tokens_per_s"] / l["tokens_per_s"]})
    rows.append(row)
    lcols = f"{row['llmc_tokens_per_s']:11.1f} {row['speedup_vs_llmc']:7.2f}" if l else f"{'-':>11s} {'-':>7s}"
    print(f"{c['name']:20s} {sm:10.0f} {tm:9.0f} {tm / sm:8.2f} {row['strata_tokens_per_s']:12.1f} "
          f"{row['torch_tokens_per_s']:11.1f} {row['strata_gflops']:11.1f} {row['torch_gflops']:10.1f} "
          f"{row['strata_ratio_to_ceiling']:9.2f} {row['strata_rss_mib']:10.0f} {rss:9.0f} {lcols}")
json.dump({"machine": s["machine"], "rows": rows}, open(os.path.join(out, "compare.json"), "w"), indent=1)
PYEOF
