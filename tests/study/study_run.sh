#!/usr/bin/env bash
# strata study end to end on a tiny model: a grid of a 1-rank and a 2-rank cell (mpirun) plus a
# cell whose layout cannot run (skipped and reported); the table (CSV, Markdown, JSON) with
# the samples budget, eval F1 and the 2-rank cell's scaling efficiency; a second run keeps
# both completed jobs; a failed job is run again; another study is refused the directory;
# strata report writes the HTML with its charts.
#   study_run.sh STRATA_BINARY SOURCE_DIR
set -euo pipefail
STRATA=${1:?usage: study_run.sh STRATA_BINARY SOURCE_DIR}
SRC=${2:?}
source "$SRC/tests/jobs/tiny_training.sh"
WORK=$(mktemp -d)
trap '[[ -n "${KEEP:-}" ]] || rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
echo "work dir: $WORK"
tiny_training "$WORK" 1000 8
# An evaluation at the end, on the training file: the table's F1 column.
sed -i '/^save_\|^logging_steps/d' "$WORK/train.yaml"
printf 'validation_file: %s\ndo_eval: true\nsave_strategy: "no"\nlogging_steps: 2\n' "$WORK/train.csv" >> "$WORK/train.yaml"

cat > "$WORK/job.yaml" <<YAML
instance_type: local.c1
training_config: $WORK/train.yaml
YAML
cat > "$WORK/study.yaml" <<YAML
study: tiny-scaling
job: $WORK/job.yaml
output_dir: $WORK/study
budget: {samples: 96}
reference_global_batch: 8
grid:
  - instance_type: [local.c1]
    lr_scaling: [sqrt]
  - instance_type: [local.c2]
    processes_per_host: [2]
    lr_scaling: [sqrt]
  - instance_type: [local.c2]
    processes_per_host: [2]
    layout: [{tensor_parallel_degree: 3}, {tensor_parallel_degree: 2}, {pipeline_parallel_degree: 2, microbatches: 2}]
projection: {instance_type: local.c2, ranks_per_host: 2, instance_counts: [2], link: datacenter-25gbit,
             layouts: [{}, {tensor_parallel_degree: 2}, {tensor_parallel_degree: 4}]}
YAML
cd "$WORK"
"$STRATA" study study.yaml > run1.log 2>&1 || { cat run1.log; fail "the study failed"; }
cat run1.log
grep -q "skipped: .*tensor_parallel_degree" run1.log || fail "the tp 3 cell on 2 ranks was not skipped with the reason"
grep -q "5 cell(s), 4 to run x 1 repeat(s), 1 skipped" run1.log || fail "the cell count line is wrong"
[[ -s study/report.html ]] && grep -q "report: .*/study/report.html" run1.log || fail "the study did not draw its report"
grep -q "projection: skipped 2 x local.c2 {tensor_parallel_degree: 4}: .*heads" run1.log || fail "the tp 4 projection was not skipped"
# 96 samples: 12 steps of 8 on one rank, 6 steps of 16 on two; sqrt scaling doubles... by sqrt(2).
python3 - "$WORK/study/results.json" "$WORK/study/unit_profiles.json" <<'PY'
import json, math, sys
r = json.load(open(sys.argv[1]))
cells = {c["parallel"] if c["world_size"] > 1 else 1: c for c in r["cells"]}
assert len(r["cells"]) == 4 and len(r["skipped"]) == 1, r
# Every multi-rank cell is projected from the unit profile of its micro-batch and tensor-parallel
# degree: data parallel (2x1x1), tensor parallel (1x1x2), the pipeline (1x2x1).
for key in ("2x1x1", "1x1x2", "1x2x1"):
    c = cells[key]
    assert c["status"] == "completed" and c["projected_train_s"] > 0, c
    assert abs(c["projection_error"] - (c["projected_train_s"] - c["train_s"]) / c["train_s"]) < 1e-9, c
assert cells["1x2x1"]["projected_bubble_s"] > 0 and cells["2x1x1"]["projected_bubble_s"] == 0, cells
assert cells["1x1x2"]["global_batch"] == 8 and cells["1x1x2"]["max_steps"] == 12, cells["1x1x2"]
profiles = json.load(open(sys.argv[2]))
assert any(" B 4 " in k and " tp 1 " in k for k in profiles), list(profiles)  # the pipeline's micro-batch
assert any(" B 8 " in k and " tp 2 " in k for k in profiles), list(profiles)
tp = [p for k, p in profiles.items() if " tp 2 " in k][0]
assert all(u["tp_calls"] == 4 for u in tp["units"][1:-1]), tp  # Megatron: 2 all-reduces each way per block
past = {(p["dp"], p["pp"], p["tp"]): p for p in r["projection"]}
assert set(past) == {(4, 1, 1), (2, 1, 2)}, past
assert all(p["train_s"] > 0 and p["cost_usd"] > 0 for p in past.values()), past
one, two = cells[1], cells["2x1x1"]
assert (one["max_steps"], one["samples"], one["global_batch"]) == (12, 96, 8), one
assert (two["max_steps"], two["samples"], two["global_batch"]) == (6, 96, 16), two
assert abs(one["learning_rate"] - 3e-3) < 1e-12 and abs(two["learning_rate"] - 3e-3 * math.sqrt(2)) < 1e-12, two
for c in (one, two):
    assert c["status"] == "completed" and c["repeats_done"] == 1, c
    assert c["train_s"] > 0 and c["samples_per_s"] > 0 and c["peak_rss_mib"] > 0, c
    assert 0 <= c["eval_f1"] <= 1 and c["cost_usd"] > 0 and c["billable_s"] > 0, c
assert abs(one["scaling_efficiency"] - 1) < 1e-12, one
eff = two["samples_per_s"] / (2 * one["samples_per_s"])
assert abs(two["scaling_efficiency"] - eff) < 1e-12, two
# cost = billable seconds x instances x price: one local.c2 instance at 0.115 USD/h
run = two["runs"][0]
assert abs(run["cost_usd"] - run["billable_seconds"] * 0.115 / 3600) < 2e-6, run
print("table ok:", one["train_s"], two["train_s"], two["scaling_efficiency"])
PY
head -1 study/results.csv | grep -q "^cell,cluster,instance_type" || fail "results.csv header"
[[ $(wc -l < study/results.csv) == 5 ]] || fail "results.csv should have a header and 4 rows"
grep -q "Every cell trains on the same number of samples, 96" study/results.md || fail "the budget note is missing"

# Resume: both jobs are kept.
"$STRATA" study study.yaml > run2.log 2>&1 || { cat run2.log; fail "the resumed study failed"; }
[[ $(grep -c "kept (completed before)" run2.log) == 4 ]] || { cat run2.log; fail "completed cells were not kept"; }
if grep -q "profiling" run2.log; then fail "the resumed study measured its unit profiles again"; fi
# The projection onto GPU instances (not in the study's fingerprint): the same cells kept, the
# layouts projected on A100 ranks from the same profiles (study/gpu_rank.h).
sed 's/^projection: {instance_type: local.c2/projection: {instance_type: ml.p4d.24xlarge/' study.yaml > gpu.yaml
cp study/results.json cpu_results.json
"$STRATA" study gpu.yaml > gpu.log 2>&1 || { cat gpu.log; fail "the study projected onto ml.p4d.24xlarge failed"; }
[[ $(grep -c "kept (completed before)" gpu.log) == 4 ]] || { cat gpu.log; fail "completed cells were not kept"; }
python3 - cpu_results.json study/results.json <<'PY'
import json, sys
cpu = {(p["dp"], p["pp"], p["tp"]): p for p in json.load(open(sys.argv[1]))["projection"]}
gpu = {(p["dp"], p["pp"], p["tp"]): p for p in json.load(open(sys.argv[2]))["projection"]}
assert set(gpu) == set(cpu) == {(4, 1, 1), (2, 1, 2)}, (cpu, gpu)
for k, p in gpu.items():
    assert p["instance_type"] == "ml.p4d.24xlarge" and p["compute_s"] > 0 and p["train_s"] > 0, p
    assert p["compute_s"] != cpu[k]["compute_s"] and p["cost_usd"] != cpu[k]["cost_usd"], (p, cpu[k])
PY
# A failed job runs again (its record moves aside).
job=$(ls -d study/jobs/*-r1 | head -1)
python3 - "$job/status.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); s["status"] = "Failed"; json.dump(s, open(sys.argv[1], "w"))
PY
"$STRATA" study study.yaml > run3.log 2>&1 || { cat run3.log; fail "the retry failed"; }
grep -q "retrying (previous run Failed" run3.log || { cat run3.log; fail "the failed cell was not retried"; }
[[ $(grep -c "kept (completed before)" run3.log) == 3 ]] || fail "the other cells should have been kept"
ls -d "$job".failed-* > /dev/null || fail "the failed record was not kept aside"

# Another study may not use the directory.
sed 's/samples: 96/samples: 64/' study.yaml > other.yaml
if "$STRATA" study other.yaml > other.log 2>&1; then fail "another study was allowed into the directory"; fi
grep -q "belongs to another study ('tiny-scaling'" other.log || { cat other.log; fail "wrong message: $(cat other.log)"; }

"$STRATA" report study > report.log 2>&1 || { cat report.log; fail "strata report failed"; }
[[ $(grep -o "<svg" study/report.html | wc -l) -ge 5 ]] || fail "the report has fewer than 5 charts"
if grep -qiE "(src|href)=\"(https?:)?//" study/report.html; then fail "the report loads something from the network"; fi
"$STRATA" report "$job" > report_job.log 2>&1 || { cat report_job.log; fail "strata report of a job failed"; }
grep -q "Memory per rank" "$job/report.html" || fail "the job report has no memory chart"

# strata plan: a calibration run and unit profiles, then every catalog type at 1 and 2 instances
# with the layouts the model takes (dp x pp x tp), fastest first; GPU types from the GPU
# catalog (an MFU each), CPU types from this machine's cores.
"$STRATA" plan job.yaml --instance-counts 1,2 --calibration-steps 4 --top 0 > plan.log 2>&1 || { cat plan.log; fail "strata plan failed"; }
cat plan.log
# A step of the tiny model takes milliseconds: a figure near zero means the calibration's two
# runs were lost in jitter and not measured again (what CI once caught).
step_s=$(sed -n 's/^measured: \([0-9.e+-]*\) s per step on 1 process.*/\1/p' plan.log)
[[ -n $step_s ]] || fail "strata plan did not measure a step"
python3 -c "import sys; sys.exit(0 if float('$step_s') > 1e-4 else 1)" || fail "implausible step time: $step_s s"
python3 - plan.log <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
rows = lines[[i for i, l in enumerate(lines) if l.startswith("layout")][0] + 1:]
assert len(rows) >= 4, rows
def seconds(hms):  # H:MM:SS, or "0.123s" under 10 s
    if hms.endswith("s"): return float(hms[:-1])
    h, m, s = map(int, hms.split(":")); return 3600 * h + 60 * m + s
rows = [r for r in rows if not r.startswith("(")]
fits = [r.split() for r in rows if r.split()[-10] == "yes"]
totals = [seconds(r[-3]) for r in fits]
assert totals == sorted(totals), "not fastest first: " + str(totals)
assert any("1 x local.c1" in r for r in rows) and any("2 x local.c2" in r for r in rows), rows
gpu = [r for r in rows if "ml.p4d.24xlarge (8 GPU rank(s))" in r]
assert gpu and all(0 < float(r.split()[-5]) <= 100 for r in gpu), gpu
assert all(r.split()[-5] == "-" for r in rows if "local.c" in r), rows
# Scaling efficiency against each type's smallest data-parallel row, which is 1 itself.
assert any("1 x ml.p4d.24xlarge" in r and " 8x1x1 " in r and r.split()[-2] == "1.00" for r in rows), gpu
assert all(0 < float(r.split()[-2]) <= 1.5 for r in rows), rows
assert any(l.startswith("  ml.p4d.24xlarge: 8 rank(s), each on a100-sxm4-40gb") for l in lines), lines
PY
if "$STRATA" plan job.yaml --instance-types ml.p4d.24xlarg > badtype.log 2>&1; then fail "an unknown instance type was accepted"; fi
grep -q "did you mean 'ml.p4d.24xlarge'" badtype.log || fail "wrong message for an unknown type: $(cat badtype.log)"
if "$STRATA" plan job.yaml --link infiniband > badlink.log 2>&1; then fail "an unknown link was accepted"; fi
grep -q "no link 'infiniband'" badlink.log || fail "wrong message for an unknown link: $(cat badlink.log)"
echo PASS
