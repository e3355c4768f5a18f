#!/usr/bin/env bash
# A spot job interrupted 3 times at random steps ends with the same final parameters, bit
# for bit, as the same job never interrupted: on one rank (the runner signals strata train
# itself) and on two (mpirun forwards the signal to both ranks). Also checks the record: 4
# attempts, the first 3 stopped by the interruptions after their steps, the events, one log
# per rank and attempt, and the billing (billable <= training seconds, cost = billable x count
# x spot price / 3600, savings against on demand). Each interruption is {at_step: N}: the
# ranks wait after step N until it reaches them, so it never comes after the job ended,
# whatever the machine's speed or load. Then the one-rank job again with a Python script as its
# entry point (run_script_job, below).
#   spot_interruptions.sh STRATA_BINARY SOURCE_DIR [SEED]
set -euo pipefail
STRATA=${1:?usage: spot_interruptions.sh STRATA_BINARY SOURCE_DIR [SEED]}
SRC=${2:?}
SEED=${3:-$RANDOM}
source "$SRC/tests/jobs/tiny_training.sh"
WORK=$(mktemp -d)
trap '[[ -n "${KEEP:-}" ]] || rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "work dir: $WORK; random seed $SEED (rerun with it as the third argument)"

job_yaml() {  # name, kind, instance_count[, interruptions]
  local name=$1 kind=$2 count=$3 times=${4:-}
  {
    echo "instance_type: local.c1"
    echo "instance_count: $count"
    echo "training_config: $WORK/$name/train.yaml"
    echo "output_path: $WORK/$name/jobs"
    echo "max_run: 600"
    echo "termination_grace_period: 30"
    if [[ -n $times ]]; then
      echo "use_spot_instances: true"
      echo "simulate_interruptions: [$times]"
      echo "simulate_capacity_wait: 0.3"
    fi
  } > "$WORK/$name/$kind.yaml"
  (cd "$WORK" && "$STRATA" job run "$WORK/$name/$kind.yaml" --job-name "$kind") > "$WORK/$name/$kind.log" 2>&1 ||
    { tail -30 "$WORK/$name/$kind.log"; fail "$name: the $kind job did not complete"; }
}

run_pair() {  # name, instance_count, steps, batch per rank
  local name=$1 count=$2 steps=$3 batch=$4
  mkdir -p "$WORK/$name"
  tiny_training "$WORK/$name" "$steps" "$batch"
  job_yaml "$name" reference "$count"
  # Three distinct steps, at random, in order: attempt k stops after the k-th and attempt k+1
  # resumes from its checkpoint. Some fall between checkpoints (every 100 steps), some on one.
  local -a at
  read -r -a at <<< "$(python3 -c "import random; random.seed($SEED); print(*sorted(random.sample(range(1, $steps), 3)))")"
  echo "$name: interruptions after steps ${at[*]} of $steps"
  job_yaml "$name" spot "$count" "{at_step: ${at[0]}}, {at_step: ${at[1]}}, {at_step: ${at[2]}}"
  local ref=$WORK/$name/jobs/reference spot=$WORK/$name/jobs/spot
  [[ $(job_field "$spot" "s['status']") == Completed ]] || fail "$name: status $(job_field "$spot" "s['status']")"
  [[ $(job_field "$spot" "s['interruptions_fired']") == 3 ]] ||
    fail "$name: $(job_field "$spot" "s['interruptions_fired']") interruptions fired, expected 3"
  # 75: stopped after a step with a checkpoint of that step.
  [[ $(job_field "$spot" "[a['exit_status'] for a in s['attempts']]") == "[75, 75, 75, 0]" ]] ||
    fail "$name: attempt exit statuses $(job_field "$spot" "[a['exit_status'] for a in s['attempts']]"), expected [75, 75, 75, 0]"
  [[ $(grep -c '"status":"Interrupted"' "$spot/events.jsonl") == 3 ]] || fail "$name: expected 3 Interrupted events"
  for a in 1 2 3 4; do
    for ((r = 0; r < count; r++)); do
      [[ -s $spot/logs/attempt-$a/rank-$r.log ]] || fail "$name: no log for attempt $a rank $r"
    done
  done
  for k in 0 1 2; do
    grep -q "stopped after step ${at[k]} of $steps" "$spot/logs/attempt-$((k + 1))/rank-0.log" ||
      fail "$name: attempt $((k + 1)) did not stop after step ${at[k]}"
    grep -q "resumed from .*checkpoint-${at[k]} " "$spot/logs/attempt-$((k + 2))/rank-0.log" ||
      fail "$name: attempt $((k + 2)) did not resume from step ${at[k]}"
  done
  cmp "$ref/model/model.safetensors" "$spot/model/model.safetensors" ||
    fail "$name: the interrupted job's final parameters differ from the uninterrupted job's"
  python3 - "$spot" "$count" <<'PY'
import json, sys
s = json.load(open(sys.argv[1] + "/status.json"))
b, count = s["billing"], int(sys.argv[2])
run = sum(a["end"] - a["start"] for a in s["attempts"])
assert abs(b["billable_seconds"] - run) < 0.01, (b, run)
assert b["billable_seconds"] <= b["training_seconds"], b
cost = b["billable_seconds"] * count * 0.01725 / 3600
assert abs(b["cost_usd"] - cost) < 2e-6, (b, cost)
assert abs(b["spot_savings_percent"] - 70.0) < 0.05, b
print(f"billing: training {b['training_seconds']:.1f} s, billable {b['billable_seconds']:.1f} s, cost {b['cost_usd']} USD")
PY
  echo "$name: 3 interruptions, final parameters identical to the uninterrupted job's"
}

# The same spot job with a script entry point (tests/jobs/train_script.py, which trains through
# strata train): the runner's stop reaches the script, the script exits 75, and each attempt
# resumes from the checkpoint the runner gives it in STRATA_RESUME_FROM_CHECKPOINT; the final
# parameters equal the uninterrupted YAML job's (one_rank's reference).
run_script_job() {
  local name=one_rank dir=$WORK/one_rank
  local -a at
  read -r -a at <<< "$(python3 -c "import random; random.seed($SEED + 1); print(*sorted(random.sample(range(1, 400), 3)))")"
  echo "script: interruptions after steps ${at[*]} of 400"
  cat > "$dir/script.yaml" <<YAML
instance_type: local.c1
entry_point: $SRC/tests/jobs/train_script.py
hyperparameters: {strata: '$STRATA', config: $dir/train.yaml, max_steps: 400}
output_path: $dir/jobs
max_run: 600
termination_grace_period: 30
use_spot_instances: true
simulate_interruptions: [{at_step: ${at[0]}}, {at_step: ${at[1]}}, {at_step: ${at[2]}}]
simulate_capacity_wait: 0.3
YAML
  (cd "$WORK" && "$STRATA" job run "$dir/script.yaml" --job-name script) > "$dir/script.log" 2>&1 ||
    { tail -30 "$dir/script.log"; fail "script: the job did not complete"; }
  local job=$dir/jobs/script
  grep -q "^script        python3 $SRC/tests/jobs/train_script.py --config $dir/train.yaml --max_steps 400 --strata" \
    "$dir/script.log" || fail "script: the plan does not show the script's command line"
  [[ $(job_field "$job" "[a['exit_status'] for a in s['attempts']]") == "[75, 75, 75, 0]" ]] ||
    fail "script: attempt exit statuses $(job_field "$job" "[a['exit_status'] for a in s['attempts']]"), expected [75, 75, 75, 0]"
  for k in 0 1 2; do
    grep -q "stopped after step ${at[k]} of 400" "$job/logs/attempt-$((k + 1))/rank-0.log" ||
      fail "script: attempt $((k + 1)) did not stop after step ${at[k]}"
    grep -q "resumed from $job/work/checkpoint-${at[k]} " "$job/logs/attempt-$((k + 2))/rank-0.log" ||
      fail "script: attempt $((k + 2)) did not resume from STRATA_RESUME_FROM_CHECKPOINT=checkpoint-${at[k]}"
  done
  cmp "$dir/jobs/reference/model/model.safetensors" "$job/model/model.safetensors" ||
    fail "script: the interrupted script job's final parameters differ from the uninterrupted YAML job's"
  python3 - "$job" <<'PY'
import json, sys
job = sys.argv[1]
given = json.load(open(job + "/output/data/given.json"))  # the last attempt's
env = given["env"]
assert given["argv"][:2] == ["--config", job.rsplit("/jobs/", 1)[0] + "/train.yaml"], given["argv"]
assert json.loads(env["SM_HPS"])["max_steps"] == 400, env["SM_HPS"]
assert env["SM_MODEL_DIR"] == job + "/output/model" and env["SM_CHECKPOINT_DIR"] == job + "/work", env
assert env["STRATA_RESUME_FROM_CHECKPOINT"].startswith(job + "/work/checkpoint-"), env
assert json.loads(env["SM_HOSTS"]) == ["algo-1"] and env["SM_CURRENT_HOST"] == "algo-1", env
assert json.loads(env["SM_TRAINING_ENV"])["job_name"] == "script", env["SM_TRAINING_ENV"]
PY
  echo "script: 3 interruptions, final parameters identical to the uninterrupted YAML job's"
}

run_pair one_rank 1 400 8
run_script_job
run_pair two_ranks 2 400 4
echo PASS
