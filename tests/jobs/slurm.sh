#!/usr/bin/env bash
# The slurm backend on a real one-machine Slurm cluster of 2 nodes (run through
# scripts/slurm_cluster.sh, which skips with exit 77 where Slurm cannot be started):
#   spot       a 2-node spot job is interrupted twice, once from inside (a simulated
#              interruption after step 200: scontrol requeue) and once by `strata job
#              interrupt` while the ranks pause after step 400 (STRATA_PAUSE_AT_STEP); Slurm
#              requeues it, the batch step resumes from the newest checkpoint, and the final
#              parameters equal those of the same 2-rank training run by mpirun on this host;
#   max_run    a job stops at max_run with a checkpoint: MaxRuntimeExceeded;
#   script     a script entry point's tasks learn the allocation's nodes and their own
#              (SM_HOSTS, SM_CURRENT_HOST) and their arguments;
#   gpus       an instance type with 2 GPUs runs 2 tasks per node, each seeing the node's GPUs
#              as Slurm gives them (the cluster declares 2 per node, without devices); one with
#              3 GPUs is refused at submission, before any work.
#   slurm.sh STRATA_BINARY SOURCE_DIR      (inside scripts/slurm_cluster.sh --nodes 2 --cpus 2 --gpus 2)
set -euo pipefail
STRATA=${1:?usage: slurm_cluster.sh --nodes 2 -- slurm.sh STRATA_BINARY SOURCE_DIR}
SRC=${2:?}
source "$SRC/tests/jobs/tiny_training.sh"
[[ -n ${SLURM_CONF:-} ]] || fail "run inside scripts/slurm_cluster.sh (SLURM_CONF is not set)"
[[ $(sinfo -h -N -o %G | sort -u) == gpu:2 ]] || fail "run inside scripts/slurm_cluster.sh --gpus 2 (the gpus case needs them)"
WORK=$(mktemp -d)
trap '[[ -n "${KEEP:-}" ]] || rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "work dir: $WORK"
cd "$WORK"
# Both interruptions come at steps where the ranks wait for them: none can come too late,
# however fast the machine.
tiny_training "$WORK" 600 4
JOBS=$WORK/jobs

mpirun --oversubscribe -np 2 "$STRATA" train train.yaml --set output_dir="$WORK/reference" --set num_threads=1 \
  > reference.log 2>&1 || { tail -20 reference.log; fail "the reference run failed"; }

echo "== spot"
cat > spot.yaml <<YAML
backend: slurm
instance_type: local.c1
instance_count: 2
training_config: $WORK/train.yaml
output_path: $JOBS
use_spot_instances: true
max_run: 600
max_wait: 1200
simulate_interruptions: [{at_step: 200}]
simulate_capacity_wait: 1
termination_grace_period: 20
environment: {STRATA_PAUSE_AT_STEP: 400}
YAML
"$STRATA" job run spot.yaml --job-name spot > spot.log 2>&1 &
runner=$!
job=$JOBS/spot
paused="paused for an interruption after step 400;"
# attempt 2 waits after step 400 (the simulated interruption's pause replaced attempt 1's)
log_appears "$job/logs/attempt-2/rank-0.log" "$paused" ||
  { kill "$runner" 2> /dev/null || true; tail -30 spot.log; fail "attempt 2 never reached step 400"; }
"$STRATA" job interrupt spot --output-path "$JOBS" | grep -q "requeued" || fail "strata job interrupt did not requeue"
wait "$runner" || { tail -30 spot.log; fail "the spot job did not complete"; }
[[ $(job_field "$job" "s['status']") == Completed ]] || fail "spot: status $(job_field "$job" "s['status']")"
[[ $(job_field "$job" "len(s['attempts'])") == 3 ]] || fail "spot: $(job_field "$job" "len(s['attempts'])") attempts, expected 3"
[[ $(grep -c "Slurm started job .* again" "$job/events.jsonl") == 2 ]] || fail "spot: Slurm did not run the job 3 times"
grep -q "^#SBATCH --requeue" "$job/job.sbatch" && grep -q "^#SBATCH --signal=B:TERM@20" "$job/job.sbatch" ||
  fail "spot: the batch script lacks --requeue / --signal"
for a in 1 2 3; do
  for r in 0 1; do [[ -s $job/logs/attempt-$a/rank-$r.log ]] || fail "spot: no log for attempt $a rank $r"; done
done
grep -q "stopped after step 200 of 600" "$job/logs/attempt-1/rank-0.log" || fail "spot: attempt 1 did not stop after step 200"
grep -q "stopped after step 400 of 600" "$job/logs/attempt-2/rank-0.log" || fail "spot: attempt 2 did not stop after step 400"
"$STRATA" job status spot --output-path "$JOBS" | grep -q "^slurm job    [0-9]" || fail "spot: status does not name the Slurm job"
cmp "$WORK/reference/model.safetensors" "$job/model/model.safetensors" ||
  fail "spot: the Slurm job's final parameters differ from the 2-rank mpirun run's"
grep -E "Training seconds|Billable seconds|savings" spot.log
echo "spot: requeued twice, final parameters identical to mpirun's"

echo "== max_run"
tiny_training "$WORK/long" 100000 4
cat > long.yaml <<YAML
backend: slurm
instance_type: local.c1
instance_count: 2
training_config: $WORK/long/train.yaml
output_path: $JOBS
max_run: 10
termination_grace_period: 20
YAML
"$STRATA" job run long.yaml --job-name maxrun > maxrun.log 2>&1 && fail "max_run: the job exited 0"
[[ $(job_field "$JOBS/maxrun" "s['status']") == MaxRuntimeExceeded ]] ||
  { tail -30 maxrun.log; fail "max_run: status $(job_field "$JOBS/maxrun" "s['status']")"; }
ls "$JOBS/maxrun/checkpoints" | grep -q '^checkpoint-' || fail "max_run: no checkpoint in checkpoint_uri"
grep -q "^#SBATCH --time=1$" "$JOBS/maxrun/job.sbatch" || fail "max_run: --time is not max_run + grace in minutes"
echo "max_run: MaxRuntimeExceeded with a checkpoint"

echo "== script"
cat > hosts.py <<'PY'
import json, os, sys
with open(os.path.join(os.environ["SM_OUTPUT_DATA_DIR"], "task-" + os.environ["SLURM_PROCID"] + ".json"), "w") as f:
    json.dump({"argv": sys.argv[1:], "hosts": json.loads(os.environ["SM_HOSTS"]), "host": os.environ["SM_CURRENT_HOST"]}, f)
PY
cat > script.yaml <<YAML
backend: slurm
instance_type: local.c1
instance_count: 2
entry_point: $WORK/hosts.py
hyperparameters: {epochs: 2}
output_path: $JOBS
max_run: 120
YAML
"$STRATA" job run script.yaml --job-name script > script.log 2>&1 || { tail -30 script.log; fail "script: the job failed"; }
python3 - "$JOBS/script/output/data" <<'PY'
import json, sys
tasks = [json.load(open(f"{sys.argv[1]}/task-{t}.json")) for t in (0, 1)]
assert [t["host"] for t in tasks] == ["n1", "n2"], tasks
assert all(t["hosts"] == ["n1", "n2"] and t["argv"] == ["--epochs", "2"] for t in tasks), tasks
PY
echo "script: each task on its node, SM_HOSTS [n1, n2]"

echo "== gpus"
cat > gpus.py <<'PY'
import json, os
with open(os.path.join(os.environ["SM_OUTPUT_DATA_DIR"], "task-" + os.environ["SLURM_PROCID"] + ".json"), "w") as f:
    json.dump({k: os.environ.get(k) for k in ("SLURMD_NODENAME", "SLURM_LOCALID", "SLURM_GPUS_ON_NODE",
                                              "CUDA_VISIBLE_DEVICES", "SM_NUM_GPUS")}, f)
PY
cat > catalog.yaml <<'YAML'
local.g2: {cores: 2, gpus: 2, memory_gib: 4, on_demand_usd_per_hour: 1.0, spot_usd_per_hour: 0.3}
local.g3: {cores: 2, gpus: 3, memory_gib: 4, on_demand_usd_per_hour: 1.5, spot_usd_per_hour: 0.45}
YAML
for type in g2 g3; do
  cat > $type.yaml <<YAML
backend: slurm
instance_type: local.$type
instance_catalog: $WORK/catalog.yaml
instance_count: 2
entry_point: $WORK/gpus.py
output_path: $JOBS
max_run: 120
YAML
done
"$STRATA" job run g2.yaml --job-name gpus > gpus.log 2>&1 || { tail -30 gpus.log; fail "gpus: the job failed"; }
grep -q "^#SBATCH --gpus-per-node=2$" "$JOBS/gpus/job.sbatch" || fail "gpus: the batch script does not ask for 2 GPUs per node"
python3 - "$JOBS/gpus/output/data" <<'PY'
import json, sys
tasks = [json.load(open(f"{sys.argv[1]}/task-{t}.json")) for t in range(4)]
assert sorted((t["SLURMD_NODENAME"], t["SLURM_LOCALID"]) for t in tasks) == [
    ("n1", "0"), ("n1", "1"), ("n2", "0"), ("n2", "1")], tasks
assert all(t["SLURM_GPUS_ON_NODE"] == "2" and t["CUDA_VISIBLE_DEVICES"] == "0,1" and t["SM_NUM_GPUS"] == "2"
           for t in tasks), tasks
PY
"$STRATA" job run g3.yaml --job-name toomany > toomany.log 2>&1 && fail "gpus: a job asking for 3 GPUs per node ran"
grep -q "Requested node configuration is not available" toomany.log || { tail toomany.log; fail "gpus: no reason given"; }
[[ ! -e $JOBS/toomany/logs/attempt-1 ]] || fail "gpus: the refused job started an attempt"
echo "gpus: 2 tasks per node see GPUs 0,1; 3 GPUs per node refused at submission"
echo PASS
