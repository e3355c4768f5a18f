#!/bin/bash
# finetune_vs_hf_trainer.sh -- a real pretrained checkpoint fine-tuned by strata and by the
# current Hugging Face Trainer, same jobs, data and seeds, one after the other on one machine,
# 2 threads each (issue 30). The checkpoint: all-MiniLM-L6-v2 (scripts/fetch_pretrained.sh).
# Each task's job file is strata's; bench/hf_trainer_finetune.py reads the same file and trains
# HF's model classes on it (see its docstring for how each task is done on the HF side):
#   spam        examples/spam/minilm.yaml         binary F1 of spam, accuracy
#   supersense  examples/supersense/minilm.yaml   accuracy, macro F1
#   qa          examples/qa/qa.yaml               SQuAD exact_match, f1
#   pos         examples/pos/minilm.yaml          token accuracy
#
#   bench/finetune_vs_hf_trainer.sh STRATA_BIN OUTDIR
#   e.g. bench/finetune_vs_hf_trainer.sh build/strata bench/results/finetune_minilm
# Env: TASKS (default "spam supersense qa pos"), SEEDS (default "1 2 3"), SIDES ("strata hf";
# one of them reruns that side, "" prints the table from the files an earlier run left),
# SET_<task> (space-separated KEY=VALUE overrides given to both sides, e.g.
# SET_qa="max_train_samples=1000"), THREADS (2).
# Writes OUTDIR/<task>/{strata,hf}-<seed>/ (the run's output, log and /usr/bin/time -v file) and
# OUTDIR/compare.json; prints a table per task: each metric's mean and range over the seeds on
# validation and test, train samples/s (median over seeds, as each side reports it: training
# rows / train_runtime) and peak RSS (largest over seeds).
set -euo pipefail
STRATA=${1:?usage: finetune_vs_hf_trainer.sh STRATA_BIN OUTDIR}
OUT=${2:?}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
STRATA=$(cd "$(dirname "$STRATA")" && pwd)/$(basename "$STRATA")
PY=$("$REPO/scripts/bench_python.sh")
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
TASKS=${TASKS:-spam supersense qa pos}
SEEDS=${SEEDS:-1 2 3}
SIDES=${SIDES-strata hf}
THREADS=${THREADS:-2}
export OMP_NUM_THREADS=$THREADS TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export HF_HOME=$OUT/hf-home
cd "$REPO"
"$REPO/scripts/fetch_pretrained.sh" > /dev/null

job_of() { case $1 in qa) echo examples/qa/qa.yaml ;; *) echo "examples/$1/minilm.yaml" ;; esac; }

echo "finetune_vs_hf_trainer: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores," \
     "threads $THREADS, load $(cut -d' ' -f1-3 /proc/loadavg)"
for task in $TASKS; do
  job=$(job_of "$task")
  var=SET_$task
  sets=()
  for kv in ${!var:-}; do sets+=(--set "$kv"); done
  for seed in $SEEDS; do
    for side in $SIDES; do
      dir=$OUT/$task/$side-$seed
      rm -rf "$dir"
      mkdir -p "$dir"
      if [[ $side == strata ]]; then
        cmd=("$STRATA" train "$job" --set "seed=$seed" --set "output_dir=$dir/run" --set "num_threads=$THREADS"
             "${sets[@]}")
      else
        cmd=("$PY" "$HERE/hf_trainer_finetune.py" --task "$task" --job "$job" --seed "$seed" --out "$dir"
             --threads "$THREADS" "${sets[@]}")
      fi
      start=$(date +%s.%N)
      /usr/bin/time -v -o "$dir/time.txt" "${cmd[@]}" > "$dir/log.txt" 2>&1 \
        || { echo "$task $side seed $seed FAILED, see $dir/log.txt" >&2; tail -5 "$dir/log.txt" >&2; exit 1; }
      awk -v t="$task" -v s="$side" -v n="$seed" -v a="$start" -v b="$(date +%s.%N)" \
        'BEGIN { printf "%-11s %-6s seed %s: %6.1f s\n", t, s, n, b - a }'
    done
  done
done

/usr/bin/python3 - "$OUT" "$TASKS" "$SEEDS" <<'PYEOF'
import json, os, re, statistics, sys
out, tasks, seeds = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
# the metrics each task is judged by: (label, strata's key after eval_/predict_, HF's key)
METRICS = {"spam": [("f1", "f1", "f1"), ("accuracy", "accuracy", "accuracy")],
           "supersense": [("accuracy", "accuracy", "accuracy"), ("macro F1", "f1_macro", "f1")],
           "qa": [("exact_match", "exact_match", "exact_match"), ("f1", "f1", "f1")],
           "pos": [("accuracy", "accuracy", "accuracy")]}


def rss_mib(path):
    return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(path).read()).group(1)) / 1024


def strata_run(d):
    r = json.load(open(os.path.join(d, "run", "all_results.json")))
    return {"samples_per_s": r["train_samples_per_second"], "train_runtime": r["train_runtime"],
            "validation": {k[5:]: v for k, v in r.items() if k.startswith("eval_")},
            "test": {k[8:]: v for k, v in r.items() if k.startswith("predict_")},
            "rss": rss_mib(os.path.join(d, "time.txt"))}


def hf_run(d):
    r = json.load(open(os.path.join(d, "result.json")))
    return {"samples_per_s": r["train_samples_per_second"], "train_runtime": r["train_runtime"],
            "validation": r["validation"], "test": r["test"], "rss": rss_mib(os.path.join(d, "time.txt")),
            "versions": r["versions"]}


summary = {}
for task in tasks:
    runs = {"strata": [], "hf": []}
    for seed in seeds:
        for side, read in (("strata", strata_run), ("hf", hf_run)):
            d = os.path.join(out, task, f"{side}-{seed}")
            if os.path.exists(os.path.join(d, "time.txt")):
                runs[side].append(dict(read(d), seed=int(seed)))
    if not runs["strata"] or not runs["hf"]:
        print(f"{task}: no runs of both sides in {out}")
        continue
    qa = task == "qa"
    scale = 1.0 if qa else 100.0  # QA metrics are percentages already
    rows = {}
    print(f"\n{task}: {len(runs['strata'])} seeds strata, {len(runs['hf'])} HF Trainer "
          f"(mean [min, max] over seeds{'' if qa else ', in %'})")
    print(f"{'':26s} {'strata':>24s} {'HF Trainer':>24s}")
    for label, skey, hkey in METRICS[task]:
        for split in ("validation", "test"):
            sv = [r[split][skey] * scale for r in runs["strata"]]
            hv = [r[split][hkey] * scale for r in runs["hf"]]
            rows[f"{split} {label}"] = {"strata": sv, "hf": hv}
            cell = lambda v: f"{statistics.mean(v):6.2f} [{min(v):6.2f}, {max(v):6.2f}]"
            print(f"{split + ' ' + label:26s} {cell(sv):>24s} {cell(hv):>24s}")
    ss = statistics.median(r["samples_per_s"] for r in runs["strata"])
    hs = statistics.median(r["samples_per_s"] for r in runs["hf"])
    srss, hrss = max(r["rss"] for r in runs["strata"]), max(r["rss"] for r in runs["hf"])
    print(f"{'train samples/s (median)':26s} {ss:24.2f} {hs:24.2f}   strata / HF {ss / hs:.2f}x")
    print(f"{'peak RSS MiB (largest)':26s} {srss:24.0f} {hrss:24.0f}   strata / HF {srss / hrss:.2f}")
    summary[task] = {"metrics": rows, "strata_samples_per_s": ss, "hf_samples_per_s": hs, "speedup": ss / hs,
                     "strata_peak_rss_mib": srss, "hf_peak_rss_mib": hrss, "runs": runs}
json.dump(summary, open(os.path.join(out, "compare.json"), "w"), indent=1)
PYEOF
