#!/bin/bash
# Side by side, in one run on one machine: strata's training step (bench_train_step) and
# PyTorch running Hugging Face's own model code (torch_peer.sh), eager and under torch.compile,
# same architectures, batches, sequence lengths, dropout and optimizer, 2 threads each; for the
# GPT-2 rows, optionally llm.c's CPU trainer too (llmc_peer.sh). Prints one table with strata's
# speedup over the faster of eager and compiled PyTorch and writes every peer's JSON plus
# compare.json to OUTDIR.
#
#   bench/compare_torch.sh BUILD_DIR OUTDIR      e.g. bench/compare_torch.sh build bench/results
#   GPT-2 rows only, with llm.c:
#        ONLY=gpt2 LLMC=/work/.mirror/karpathy+llm.c/repo bench/compare_torch.sh build bench/results/gpt2
# The PyTorch side runs in the benchmark environment (scripts/install_bench_deps.sh).
# Env: ISA=avx2 caps both sides at AVX2 (strata: STRATA_MAX_CPU_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2;
# PyTorch: ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2; default:
# the machine's own ISA); COMPILE=0 leaves torch.compile out; TABLE_ONLY=1 runs nothing and
# prints the table of what an earlier run left in OUTDIR;
# ONLY=distilbert|bert|gpt2 runs that family's rows alone (default: all); LLMC=an llm.c
# checkout (work tree or git dir) adds llm.c to the GPT-2 rows; THREADS (2); STEPS (strata's
# timed steps, 5).
set -euo pipefail
BUILD=${1:?usage: compare_torch.sh BUILD_DIR OUTDIR}
OUT=${2:?}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/strata" "$OUT/torch"
export THREADS=${THREADS:-2} ONLY=${ONLY:-}
case "${ISA:-native}" in
  avx2) export STRATA_MAX_CPU_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 \
               MKL_ENABLE_INSTRUCTIONS=AVX2 ;;
  native) ;;
  *) echo "compare_torch.sh: ISA must be avx2 or native, not '$ISA'" >&2; exit 2 ;;
esac
echo "ISA: ${ISA:-native}; $(grep -m1 'model name' /proc/cpuinfo); load: $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -z "${TABLE_ONLY:-}" ]]; then
echo "== strata (bench_train_step, $THREADS threads)"
"$BUILD/bench/bench_train_step" --threads "$THREADS" --steps "${STEPS:-5}" ${ONLY:+--only "$ONLY"} \
    --json "$OUT/strata/train_step.json"
echo "== PyTorch (eager and torch.compile) + HF Transformers ($THREADS threads)"
"$HERE/torch_peer.sh" "$OUT/torch"
rm -rf "$OUT/llmc"
if [[ -n "${LLMC:-}" && ( -z "$ONLY" || "$ONLY" == gpt2 ) ]]; then
  echo "== llm.c train_gpt2.c ($THREADS threads)"
  SHAPES="4x256 4x64" "$HERE/llmc_peer.sh" "$LLMC" "$OUT/llmc"
fi
fi
/usr/bin/python3 - "$OUT" "${ISA:-native}" "$HERE" <<'PYEOF'
import json, os, sys
out, isa = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
import peer_result
s = json.load(open(os.path.join(out, "strata", "train_step.json")))
pairs = {"distilbert-base b8": "distilbert-b8-train", "distilbert-base b32": "distilbert-b32-train",
         "bert-base b8": "bert-b8-train", "gpt2 b4 t256": "gpt2-b4-t256-train", "gpt2 b4 t64": "gpt2-b4-t64-train"}
llmc_path = os.path.join(out, "llmc", "summary.json")
llmc = {r["name"].replace("llmc ", "gpt2 "): r for r in json.load(open(llmc_path))} if os.path.exists(llmc_path) else {}


def peer(name):  # hf_throughput's JSON and the process's peak RSS (MiB), or None if not run
    return peer_result.read(os.path.join(out, "torch"), name)


rows = []
print(f"\nISA {isa}; machine: {s['machine']}; strata GEMM ceiling {s['gemm_ceiling_gflops']:.0f} GFLOP/s")
print("ms per training step (median); speedup = the faster PyTorch / strata; GFLOP/s count the LM head; "
      "RSS = peak resident MiB of the process")
print(f"{'config':20s} {'strata':>7s} {'eager':>7s} {'compiled':>8s} {'speedup':>7s} {'strata GF/s':>11s} "
      f"{'x ceiling':>9s} {'strata RSS':>10s} {'eager RSS':>9s} {'comp. RSS':>9s} {'RSS ratio':>9s} "
      f"{'llm.c ms':>8s} {'x llm.c':>7s}")
for c in s["configs"]:
    eager, comp = peer(pairs[c["name"]]), peer(pairs[c["name"]] + "-compiled")
    if not eager:
        print(f"{c['name']:20s} no PyTorch result")
        continue
    sm = c["ms_per_step"]["median"]
    em = eager["ms_per_step"]["median"]
    cm = comp["ms_per_step"]["median"] if comp else None
    best = min(x for x in (em, cm) if x is not None)
    peer_rss = min(x["rss_mib"] for x in (eager, comp) if x)
    row = {"config": c["name"], "isa": isa, "strata_ms": sm, "eager_ms": em, "compiled_ms": cm,
           "compile_s": comp["compile_s"] if comp else None, "speedup": best / sm,
           "speedup_vs_eager": em / sm, "speedup_vs_compiled": cm / sm if cm else None,
           "strata_tokens_per_s": c["tokens_per_s"], "strata_gflops": c["gflops_per_s"],
           "eager_gflops": eager["gflops_per_s_total"]["median"],
           "compiled_gflops": comp["gflops_per_s_total"]["median"] if comp else None,
           "strata_ratio_to_ceiling": c["ratio_to_gemm_ceiling"], "strata_rss_mib": c["peak_rss_mib"],
           "eager_rss_mib": eager["rss_mib"], "compiled_rss_mib": comp["rss_mib"] if comp else None,
           "rss_ratio": c["peak_rss_mib"] / peer_rss,
           "torch": eager["torch"], "transformers": eager["transformers"],
           "torch_cpu_capability": eager["cpu_capability"]}
    l = llmc.get(c["name"])
    if l:
        row.update({"llmc_ms": l["ms_per_step"]["median"], "llmc_tokens_per_s": l["tokens_per_s"],
                    "speedup_vs_llmc": c["tokens_per_s"] / l["tokens_per_s"]})
    rows.append(row)
    fmt = lambda v, w, p=0: f"{v:{w}.{p}f}" if v is not None else f"{'-':>{w}s}"
    print(f"{c['name']:20s} {sm:7.0f} {em:7.0f} {fmt(cm, 8)} {row['speedup']:7.2f} {row['strata_gflops']:11.1f} "
          f"{row['strata_ratio_to_ceiling']:9.2f} {row['strata_rss_mib']:10.0f} {eager['rss_mib']:9.0f} "
          f"{fmt(row['compiled_rss_mib'], 9)} {row['rss_ratio']:9.2f} {fmt(row.get('llmc_ms'), 8)} "
          f"{fmt(row.get('speedup_vs_llmc'), 7, 2)}")
print(f"PyTorch {rows[0]['torch']} (ATen CPU capability {rows[0]['torch_cpu_capability']}), "
      f"transformers {rows[0]['transformers']}")
json.dump({"machine": s["machine"], "isa": isa, "rows": rows}, open(os.path.join(out, "compare.json"), "w"),
          indent=1)
PYEOF
