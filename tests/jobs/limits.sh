#!/usr/bin/env bash
# A job's life beyond a plain run, through the strata job commands:
#   max_run     a 2-rank job too long to end in max_run stops at max_run with a final
#               checkpoint: MaxRuntimeExceeded;
#   resume      a 1-rank job given that job's checkpoint_uri resumes from its checkpoint (another
#               number of ranks, another job) and completes the training;
#   unique      running a finished job again is refused; --rerun runs it, keeping the old record;
#   max_wait    a spot job interrupted after step 10, whose capacity does not come back, ends
#               MaxWaitTimeExceeded;
#   stop        `strata job stop` ends a running job Stopped, with a checkpoint;
#   interrupt   `strata job interrupt` interrupts a spot job (its ranks wait for it after step 50:
#               STRATA_PAUSE_AT_STEP), which resumes and completes;
#               an on-demand job cannot be interrupted;
#   failed      a training that fails ends Failed, its message quoting the rank's error;
#   status, list, logs  show what the record holds.
# Nothing waits on the machine's speed but max_run and max_wait themselves, whose jobs cannot
# end first (100000 steps; a pause after step 10) and whose limits leave start-up 4x the time
# it takes here.
#   limits.sh STRATA_BINARY SOURCE_DIR
set -euo pipefail
STRATA=${1:?usage: limits.sh STRATA_BINARY SOURCE_DIR}
SRC=${2:?}
source "$SRC/tests/jobs/tiny_training.sh"
WORK=$(mktemp -d)
trap '[[ -n "${KEEP:-}" ]] || rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "work dir: $WORK"
cd "$WORK"
JOBS=$WORK/jobs

spec() {  # file, then "key: value" lines
  local file=$1
  shift
  { echo "instance_type: local.c1"; echo "output_path: $JOBS"; printf '%s\n' "$@"; } > "$WORK/$file"
}
job() { "$STRATA" job "$@" --output-path "$JOBS"; }
status_of() { job_field "$JOBS/$1" "s['status']"; }
wait_log() {  # name, text: until rank 0 has logged the text
  log_appears "$JOBS/$1/logs/attempt-*/rank-0.log" "$2" || fail "$1 never logged '$2'"
}

tiny_training "$WORK/t2" 100000 4  # 2 ranks x 4: far more steps than max_run allows
tiny_training "$WORK/t1" 600 8     # 1 rank x 8: the same global batch

echo "== max_run"
spec maxrun.yaml "instance_count: 2" "training_config: $WORK/t2/train.yaml" "max_run: 8" "termination_grace_period: 20"
set +e
"$STRATA" job run maxrun.yaml --job-name maxrun > maxrun.log 2>&1
rc=$?
set -e
[[ $rc != 0 ]] || fail "max_run: the job exited 0"
[[ $(status_of maxrun) == MaxRuntimeExceeded ]] || { tail -20 maxrun.log; fail "max_run: status $(status_of maxrun)"; }
grep -q "max_run reached" "$JOBS/maxrun/events.jsonl" || fail "max_run: no 'max_run reached' event"
last=$(ls "$JOBS/maxrun/checkpoints" | grep "^checkpoint-" | sort -t- -k2 -n | tail -1 || true)
[[ -n $last ]] || fail "max_run: no checkpoint in checkpoint_uri"
echo "max_run: stopped with $last in checkpoint_uri"
final=$(((${last#checkpoint-} / 100 + 3) * 100))  # a checkpoint step (save_steps 100): the --rerun resumes there

echo "== resume on another number of ranks"
tiny_training "$WORK/rest" "$final" 8  # the same model, 200 to 300 steps past the checkpoint
spec rest.yaml "training_config: $WORK/rest/train.yaml" "checkpoint_uri: file://$JOBS/maxrun/checkpoints"
"$STRATA" job run rest.yaml --job-name rest > rest.log 2>&1 || { tail -20 rest.log; fail "resume: the job failed"; }
grep -q "resuming from $last" "$JOBS/rest/events.jsonl" || fail "resume: did not resume from $last"
grep -q "resumed from .*$last" "$JOBS/rest/logs/attempt-1/rank-0.log" || fail "resume: the trainer did not resume from $last"
[[ $(python3 -c "import json; print(json.load(open('$JOBS/rest/model/train_results.json'))['global_step'])") == "$final" ]] ||
  fail "resume: the training did not end at step $final"
echo "resume: 1 rank resumed the 2-rank job's $last and completed step $final"

echo "== a job name is unique"
set +e
out=$("$STRATA" job run rest.yaml --job-name rest 2>&1)
rc=$?
set -e
[[ $rc != 0 && $out == *"job rest already exists (status Completed"*"--rerun"* ]] || fail "unique: $out"
"$STRATA" job run rest.yaml --job-name rest --rerun > rerun.log 2>&1 || { tail -20 rerun.log; fail "--rerun failed"; }
[[ $(status_of rest) == Completed ]] || fail "--rerun: status $(status_of rest)"
ls -d "$JOBS"/rest.previous-* > /dev/null || fail "--rerun: the previous record was not kept"
grep -q "resuming from checkpoint-$final" "$JOBS/rest/events.jsonl" || fail "--rerun: did not resume from the final checkpoint"
echo "unique: refused, then --rerun resumed from checkpoint-$final"

echo "== max_wait"
spec maxwait.yaml "training_config: $WORK/t1/train.yaml" "use_spot_instances: true" "max_run: 20" "max_wait: 20" \
  "termination_grace_period: 20" "simulate_interruptions: [{at_step: 10}]" "simulate_capacity_wait: 100"
start=$(date +%s)
"$STRATA" job run maxwait.yaml --job-name maxwait > maxwait.log 2>&1 && fail "max_wait: the job exited 0"
[[ $(status_of maxwait) == MaxWaitTimeExceeded ]] || { tail -20 maxwait.log; fail "max_wait: status $(status_of maxwait)"; }
(($(date +%s) - start < 80)) || fail "max_wait: took $(($(date +%s) - start)) s"
echo "max_wait: ended MaxWaitTimeExceeded while waiting for capacity"

echo "== stop"
tiny_training "$WORK/long" 100000 8
spec long.yaml "training_config: $WORK/long/train.yaml"
"$STRATA" job run long.yaml --job-name stopme > stopme.log 2>&1 &
runner=$!
wait_log stopme '"step":'
job interrupt stopme > interrupt.log 2>&1 && fail "interrupt: an on-demand job was interrupted"
grep -q "on-demand capacity; only spot capacity is interrupted" interrupt.log || fail "interrupt: $(cat interrupt.log)"
job stop stopme | grep -q "stop requested" || fail "stop: no confirmation"
wait $runner && fail "stop: the runner exited 0"
[[ $(status_of stopme) == Stopped ]] || { tail -20 stopme.log; fail "stop: status $(status_of stopme)"; }
ls "$JOBS/stopme/checkpoints" | grep -q '^checkpoint-' || fail "stop: no checkpoint in checkpoint_uri"
echo "stop: Stopped with a checkpoint"

echo "== interrupt"
spec intme.yaml "training_config: $WORK/t1/train.yaml" "use_spot_instances: true" "simulate_capacity_wait: 0.5" \
  "environment: {STRATA_PAUSE_AT_STEP: 50}"
"$STRATA" job run intme.yaml --job-name intme > intme.log 2>&1 &
runner=$!
wait_log intme "paused for an interruption after step 50;"
job interrupt intme | grep -q "interruption requested" || fail "interrupt: no confirmation"
wait $runner || { tail -20 intme.log; fail "interrupt: the job did not complete"; }
[[ $(job_field "$JOBS/intme" "len(s['attempts'])") == 2 ]] || fail "interrupt: expected 2 attempts"
grep -q "stopped after step 50 of 600" "$JOBS/intme/logs/attempt-1/rank-0.log" || fail "interrupt: attempt 1 did not stop after step 50"
grep -q '"status":"Interrupted"' "$JOBS/intme/events.jsonl" || fail "interrupt: no Interrupted status"
echo "interrupt: interrupted once, resumed, completed"

echo "== failed"
tiny_training "$WORK/bad" 100 8
sed -i 's/^text,label$/text,category/' "$WORK/bad/train.csv"
spec bad.yaml "training_config: $WORK/bad/train.yaml"
"$STRATA" job run bad.yaml --job-name bad > bad.log 2>&1 && fail "failed: the job exited 0"
[[ $(status_of bad) == Failed ]] || fail "failed: status $(status_of bad)"
job_field "$JOBS/bad" "s['message']" | grep -q "exited with status 1; rank-0.log: error: .*label" ||
  fail "failed: the message does not quote the error: $(job_field "$JOBS/bad" "s['message']")"
echo "failed: $(job_field "$JOBS/bad" "s['message']")"

echo "== status, list, logs"
job status rest > st.txt
grep -q "^status       Completed" st.txt && grep -q "^Billable seconds:" st.txt && grep -q "resuming from checkpoint-$final" st.txt ||
  { cat st.txt; fail "status: unexpected output"; }
[[ $(job status maxrun --json | python3 -c "import json,sys; print(json.load(sys.stdin)['status'])") == MaxRuntimeExceeded ]] ||
  fail "status --json"
job list > list.txt
for n in maxrun rest maxwait stopme intme bad; do grep -q "^$n " list.txt || { cat list.txt; fail "list: no $n"; }; done
job logs maxrun --attempt 1 --rank 1 > logs.txt  # to a file: head in a pipe would cut it off (pipefail)
[[ $(head -1 logs.txt) == "==> logs/attempt-1/rank-1.log <==" ]] || fail "logs: no rank 1 log"
echo PASS
