#!/bin/bash
# bf16 mixed precision side by side, in one run on one machine: strata's training step in fp32
# and with bf16 products (bench_train_step --precision bf16: oneDNN's bf16 matmul where the CPU
# has avx512_bf16 or AMX), and PyTorch + HF Transformers under torch.autocast("cpu",
# dtype=torch.bfloat16), eager and compiled (torch_peer.sh with AUTOCAST=bf16), same models,
# batches and threads. Prints one table: strata bf16 against strata fp32 (target >= 1.6x on
# bf16 CPUs) and against the faster PyTorch autocast (target >= 1.3x), and peak RSS; writes
# every side's JSON and mixed_precision.json to OUTDIR.
#
#   bench/mixed_precision.sh BUILD_DIR OUTDIR       e.g. bench/mixed_precision.sh build bench/results/bf16
# Env: ONLY=distilbert|bert|gpt2 (one family; default: all), COMPILE=0 (no torch.compile rows), THREADS (2),
# STEPS (strata's timed steps, 5), TABLE_ONLY=1 (print the table of an earlier run in OUTDIR).
# The PyTorch side runs in the benchmark environment (scripts/install_bench_deps.sh).
set -euo pipefail
BUILD=${1:?usage: mixed_precision.sh BUILD_DIR OUTDIR}
OUT=${2:?}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/strata" "$OUT/torch-bf16"
export THREADS=${THREADS:-2} ONLY=${ONLY:-}
echo "$(grep -m1 'model name' /proc/cpuinfo); bf16 flags: $(grep -o -m1 'avx512_bf16\|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ');" \
     "load: $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -z "${TABLE_ONLY:-}" ]]; then
  # fp32 and bf16 alternate per model family, so that a drift of the machine's speed over the
  # run (a loaded host, a clock falling under sustained load) does not fall on one side.
  for fam in ${ONLY:-distilbert bert gpt2}; do
    for p in fp32 bf16; do
      echo "== strata $p $fam (bench_train_step, $THREADS threads)"
      "$BUILD/bench/bench_train_step" --threads "$THREADS" --steps "${STEPS:-5}" --precision "$p" \
          --only "$fam" --json "$OUT/strata/$p-$fam.json"
    done
  done
  /usr/bin/python3 - "$OUT/strata" ${ONLY:-distilbert bert gpt2} <<'PYEOF'
import json, os, sys
out, families = sys.argv[1], sys.argv[2:]
for p in ("fp32", "bf16"):  # one file per precision: the first family's machine and ceiling, every config
    parts = [json.load(open(os.path.join(out, f"{p}-{f}.json"))) for f in families]
    merged = dict(parts[0], configs=[c for part in parts for c in part["configs"]])
    json.dump(merged, open(os.path.join(out, p + ".json"), "w"), indent=1)
PYEOF
  echo "== PyTorch + HF Transformers under torch.autocast bf16 ($THREADS threads)"
  AUTOCAST=bf16 "$HERE/torch_peer.sh" "$OUT/torch-bf16"
fi
/usr/bin/python3 - "$OUT" "$HERE" <<'PYEOF'
import json, os, sys
out = sys.argv[1]
sys.path.insert(0, sys.argv[2])
import peer_result
fp32, bf16 = (json.load(open(os.path.join(out, "strata", p + ".json"))) for p in ("fp32", "bf16"))
peers = {"distilbert-base b8": "distilbert-b8-train", "distilbert-base b32": "distilbert-b32-train",
         "bert-base b8": "bert-b8-train", "gpt2 b4 t256": "gpt2-b4-t256-train", "gpt2 b4 t64": "gpt2-b4-t64-train"}


def peer(name):  # hf_throughput's JSON and the process's peak RSS (MiB), or None if not run
    return peer_result.read(os.path.join(out, "torch-bf16"), name)


print(f"\nmachine: {bf16['machine']}; bf16 products: {bf16['matmul']}")
print(f"GEMM ceilings (best BERT-base shape): fp32 {fp32['gemm_ceiling_gflops']:.0f}, bf16 {bf16['gemm_ceiling_gflops']:.0f} GFLOP/s")
print("ms per training step (median); bf16/fp32 = strata fp32 ms / strata bf16 ms; vs autocast = the faster "
      "PyTorch autocast ms / strata bf16 ms; RSS = peak resident MiB")
print(f"{'config':20s} {'fp32':>7s} {'bf16':>7s} {'bf16/fp32':>9s} {'autocast':>8s} {'compiled':>8s} "
      f"{'vs autocast':>11s} {'fp32 RSS':>8s} {'bf16 RSS':>8s} {'torch RSS':>9s}")
rows = []
by_name = {c["name"]: c for c in fp32["configs"]}
for c in bf16["configs"]:
    f = by_name[c["name"]]
    eager, comp = peer(peers[c["name"]] + "-bf16"), peer(peers[c["name"]] + "-bf16-compiled")
    sm, fm = c["ms_per_step"]["median"], f["ms_per_step"]["median"]
    em = eager["ms_per_step"]["median"] if eager else None
    cm = comp["ms_per_step"]["median"] if comp else None
    best = min([x for x in (em, cm) if x is not None], default=None)
    row = {"config": c["name"], "strata_fp32_ms": fm, "strata_bf16_ms": sm, "bf16_speedup_vs_fp32": fm / sm,
           "autocast_eager_ms": em, "autocast_compiled_ms": cm,
           "bf16_speedup_vs_autocast": best / sm if best else None,
           "strata_fp32_rss_mib": f["peak_rss_mib"], "strata_bf16_rss_mib": c["peak_rss_mib"],
           "autocast_rss_mib": min([x["rss_mib"] for x in (eager, comp) if x], default=None),
           "strata_bf16_gflops": c["gflops_per_s"], "strata_fp32_gflops": f["gflops_per_s"]}
    rows.append(row)
    fmt = lambda v, w, p=0: f"{v:{w}.{p}f}" if v is not None else f"{'-':>{w}s}"
    print(f"{c['name']:20s} {fm:7.0f} {sm:7.0f} {row['bf16_speedup_vs_fp32']:9.2f} {fmt(em, 8)} {fmt(cm, 8)} "
          f"{fmt(row['bf16_speedup_vs_autocast'], 11, 2)} {f['peak_rss_mib']:8.0f} {c['peak_rss_mib']:8.0f} "
          f"{fmt(row['autocast_rss_mib'], 9)}")
json.dump({"machine": bf16["machine"], "matmul": bf16["matmul"], "ceilings": {
    "fp32": fp32["gemm_ceiling_gflops"], "bf16": bf16["gemm_ceiling_gflops"]}, "rows": rows},
    open(os.path.join(out, "mixed_precision.json"), "w"), indent=1)
PYEOF
