#!/usr/bin/env bash
# A spot job interrupted 3 times at random moments ends with the same final parameters, bit
# for bit, as the same job never interrupted: on one rank (the runner signals strata train
# itself) and on two (mpirun forwards the signal to both ranks). Also checks the record: 4
# attempts, the first 3 ended by the interruptions, the events, one log per rank and attempt,
# and the billing (billable <= training seconds, cost = billable x count x spot price / 3600,
# savings against on demand).
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

job_yaml() {  # name, kind, instance_count[, interruption times]
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
  # The k-th attempt is interrupted TIMES[k] seconds after it starts, at random between half
  # its start-up (the ranks load data: the stop must wait for them) and start-up plus 20% of
  # the reference's training time (times SCALE), so that the 3 interruptions come before the
  # job ends. Under heavy load an attempt's start-up can run much faster than the reference's
  # did and the last interruption then lands after the job finished (the attempt ends 0, as
  # it should): the job is run again with the times halved, at most four times, and says so
  # (an interruption too early is harmless: it kills the ranks while they start).
  local scale try kind
  for try in 1 2 3 4 5; do
    scale=$(python3 -c "print(0.5 ** ($try - 1))")
    TIMES=$(python3 - "$WORK/$name/jobs/reference" "$SEED" "$scale" <<'PY'
import json, random, sys
s = json.load(open(sys.argv[1] + "/status.json"))
train = json.load(open(sys.argv[1] + "/model/train_results.json"))["train_runtime"]
startup = max(0.1, s["billing"]["billable_seconds"] - train)
random.seed(int(sys.argv[2]))
scale = float(sys.argv[3])
print(", ".join(f"{scale * random.uniform(0.5 * startup, startup + 0.2 * train):.2f}" for _ in range(3)))
PY
)
    kind=spot-$try
    echo "$name: interruptions [$TIMES] s into attempts 1, 2, 3"
    job_yaml "$name" "$kind" "$count" "$TIMES"
    (($(job_field "$WORK/$name/jobs/$kind" "len(s['attempts'])") == 4)) && break
    echo "$name: the job ended in $(job_field "$WORK/$name/jobs/$kind" "len(s['attempts'])") attempts: an interruption came after the training ended; again with the times halved"
  done
  local ref=$WORK/$name/jobs/reference spot=$WORK/$name/jobs/$kind
  [[ $(job_field "$spot" "s['status']") == Completed ]] || fail "$name: status $(job_field "$spot" "s['status']")"
  [[ $(job_field "$spot" "s['interruptions_fired']") == 3 ]] ||
    fail "$name: $(job_field "$spot" "s['interruptions_fired']") interruptions fired, expected 3 (the job trained for too short a time?)"
  # 75: stopped after a step with a checkpoint; an interruption that comes while the ranks
  # still start up kills them instead (the attempt resumes from the checkpoint before).
  [[ $(job_field "$spot" "[a['exit_status'] != 0 for a in s['attempts']]") == "[True, True, True, False]" ]] ||
    fail "$name: attempt exit statuses $(job_field "$spot" "[a['exit_status'] for a in s['attempts']]"), expected 3 non-zero, then 0"
  echo "$name: attempt exit statuses $(job_field "$spot" "[a['exit_status'] for a in s['attempts']]")"
  [[ $(grep -c '"status":"Interrupted"' "$spot/events.jsonl") == 3 ]] || fail "$name: expected 3 Interrupted events"
  # Every attempt whose ranks ran (not killed while starting) left one log per rank.
  for a in $(job_field "$spot" "' '.join(str(a['attempt']) for a in s['attempts'] if a['exit_status'] in (0, 75))"); do
    for ((r = 0; r < count; r++)); do
      [[ -s $spot/logs/attempt-$a/rank-$r.log ]] || fail "$name: no log for attempt $a rank $r"
    done
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

run_pair one_rank 1 1000 8
run_pair two_ranks 2 900 4
echo PASS
