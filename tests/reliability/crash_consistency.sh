#!/usr/bin/env bash
# Crash-consistency harness (docs/reliability.md, "Crash consistency"). Each trial trains the
# tiny BERT of tests/jobs/tiny_training.sh (dropout on) for 30 steps with a checkpoint every 3
# steps and save_total_limit 2, kills every process of the run with SIGKILL at a random moment,
# restarts it (resume_from_checkpoint: latest, or from scratch while no checkpoint exists), and
# repeats KILLS times before letting the run finish. It checks:
#   - after each kill, every checkpoint-<N> directory loads (weights, optimizer and trainer
#     state, by `strata train` resuming from it), and the hidden .tmp-/.deleting- directories
#     of an unfinished save or rotation are never listed as checkpoints;
#   - the restart resumes from the newest checkpoint-<N> present;
#   - the final model.safetensors equals an uninterrupted run's, byte for byte.
# It counts the kills that landed inside a save (a .tmp- directory left), inside a rotation (a
# .deleting- directory left), before the first checkpoint (only the .tmp- directory, or
# nothing), and after the run had finished.
#   crash_consistency.sh STRATA_BINARY SOURCE_DIR TRIALS RANKS [KILLS] [SEED]
set -euo pipefail
STRATA=${1:?usage: crash_consistency.sh STRATA_BINARY SOURCE_DIR TRIALS RANKS [KILLS] [SEED]}
SRC=${2:?}
TRIALS=${3:?}
RANKS=${4:?}
KILLS=${5:-3}
SEED=${6:-$RANDOM}
source "$SRC/tests/jobs/tiny_training.sh"
WORK=$(mktemp -d)
trap '[[ -n "${KEEP:-}" ]] || rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
echo "work dir: $WORK; $TRIALS trials, $RANKS rank(s), $KILLS kills each; random seed $SEED (rerun with it as the sixth argument)"
RANDOM=$SEED

tiny_training "$WORK" 30 $((8 / RANKS))
sed -i 's/^save_steps: .*/save_steps: 3/; s/^logging_steps: .*/logging_steps: 5/' "$WORK/train.yaml"
echo "num_threads: 1" >> "$WORK/train.yaml"

# start OUT LOG [options...]: starts the run in the background in a session of its own (its
# id is RUN_PID), so that one kill reaches mpirun and every rank at once (a machine going down).
start() {
  local out=$1 log=$2
  shift 2
  if [[ $RANKS == 1 ]]; then
    setsid "$STRATA" train "$WORK/train.yaml" --output_dir "$out" "$@" > "$log" 2>&1 &
  else
    setsid mpirun --oversubscribe -np "$RANKS" "$STRATA" train "$WORK/train.yaml" --output_dir "$out" "$@" \
      > "$log" 2>&1 &
  fi
  RUN_PID=$!
}

# Two uninterrupted runs: they must agree with each other, and the faster one sets the
# time scale of the kills (on a loaded machine one run can take many times the other's).
best_ms=
for ref in reference reference_again; do
  t0=$(date +%s.%N)
  start "$WORK/$ref" "$WORK/$ref.log"
  wait "$RUN_PID" || { tail -20 "$WORK/$ref.log"; fail "the uninterrupted run failed"; }
  ms=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%d", (b - a) * 1000 }')
  if [[ -z $best_ms ]] || ((ms < best_ms)); then best_ms=$ms; fi
done
cmp -s "$WORK/reference/model.safetensors" "$WORK/reference_again/model.safetensors" ||
  fail "two uninterrupted runs end with different parameters"
echo "uninterrupted run: $best_ms ms (the faster of two identical runs)"
# A kill lands uniformly in [0, 1.2 x that time x the share of the steps left] after a start
# (at least a fifth of it: start-up takes its time). The time scale then follows the machine:
# each trial's last (uninterrupted) attempt sets it, and a kill that came too late halves it.
SPAN_MS=$((best_ms * 12 / 10))

# checkpoint_step DIR: N of a checkpoint-N directory name, or nothing.
checkpoint_step() { [[ $(basename "$1") =~ ^checkpoint-([0-9]+)$ ]] && echo "${BASH_REMATCH[1]}"; }

# newest_checkpoint OUT: the checkpoint-N with the largest N, or nothing.
newest_checkpoint() {
  local d n best=-1 path=
  for d in "$1"/checkpoint-*; do
    n=$(checkpoint_step "$d") || continue
    if ((n > best)); then best=$n path=$d; fi
  done
  echo "$path"
}

# check_loads DIR: a run resuming from DIR, with nothing left to train, loads all of it.
check_loads() {
  local dir=$1 n probe=$WORK/probe
  n=$(checkpoint_step "$dir")
  rm -rf "$probe"
  "$STRATA" train "$WORK/train.yaml" --output_dir "$probe" --max_steps "$n" --resume_from_checkpoint "$dir" \
    > "$probe.log" 2>&1 || { tail -5 "$probe.log"; fail "trial $trial: $dir does not load"; }
}

# report WHAT: the counts so far (a long run stopped early still has them).
report() {
  echo "$1 x $KILLS kills ($kills_total kills, $RANKS rank(s)): every final model equals the uninterrupted" \
    "run's byte for byte; $resumes restarts checked to resume from the newest checkpoint; kills inside a save:" \
    "$in_save, inside a rotation: $in_rotation, before the first checkpoint: $before_first (only a .tmp-" \
    "directory: $only_tmp), after the run had ended: $after_end"
}

in_save=0 in_rotation=0 before_first=0 only_tmp=0 after_end=0 kills_total=0 resumes=0
for ((trial = 1; trial <= TRIALS; ++trial)); do
  out=$WORK/trial
  rm -rf "$out" "$out".*.log
  for ((k = 0; k <= KILLS; ++k)); do
    log=$out.$k.log
    newest=$(newest_checkpoint "$out")
    if [[ -n $newest ]]; then
      start "$out" "$log" --resume_from_checkpoint latest
    else
      start "$out" "$log" --overwrite_output_dir true
    fi
    done_steps=0
    if [[ -n $newest ]]; then done_steps=$(checkpoint_step "$newest"); fi
    share=$((30 - done_steps > 6 ? 30 - done_steps : 6))
    if ((k == KILLS)); then
      t_start=$(date +%s%N)
      wait "$RUN_PID" || { tail -20 "$log"; fail "trial $trial: the last restart failed"; }
      # Other load changes the machine's speed: the time scale follows the last whole attempt.
      SPAN_MS=$((($(date +%s%N) - t_start) / 1000000 * 12 / 10 * 30 / share))
    else
      span=$((SPAN_MS * share / 30 > 100 ? SPAN_MS * share / 30 : 100))
      sleep "$(awk -v r=$((RANDOM * 32768 + RANDOM)) -v span="$span" 'BEGIN { printf "%.3f", (r % span) / 1000 }')"
      # mpirun puts each rank in a process group of its own, but all stay in the session.
      pkill -KILL -s "$RUN_PID" || true
      rc=0
      { wait "$RUN_PID"; } 2> /dev/null || rc=$?
      while pgrep -s "$RUN_PID" > /dev/null; do sleep 0.05; done  # the ranks are not our children
      if ((rc == 0)); then
        ((++after_end))
        SPAN_MS=$((SPAN_MS / 2))  # the run is faster than the time scale assumed
      elif ((rc != 137)); then
        tail -20 "$log"
        fail "trial $trial: attempt $k ended with status $rc before the kill"
      fi
      ((++kills_total))
      compgen -G "$out/.tmp-checkpoint-*" > /dev/null && ((++in_save))
      compgen -G "$out/.deleting-checkpoint-*" > /dev/null && ((++in_rotation))
      if [[ -z $(newest_checkpoint "$out") ]]; then
        ((++before_first))
        compgen -G "$out/.tmp-checkpoint-*" > /dev/null && ((++only_tmp))
      fi
      for d in "$out"/checkpoint-*; do
        [[ -e $d ]] || continue
        [[ -n $(checkpoint_step "$d") ]] || fail "trial $trial: unexpected entry $d"
        check_loads "$d"
      done
    fi
    # Where the attempt resumed from, if it got as far as saying so before the kill.
    got=$(grep -o "resumed from [^ ]* at step" "$log" | awk '{print $3}' || true)
    if [[ -n $newest && -n $got ]]; then
      [[ $got == "$newest" ]] || fail "trial $trial: resumed from '$got', the newest checkpoint is $newest"
      ((++resumes))
    fi
    [[ -n $got || -z $newest || $k != "$KILLS" ]] || fail "trial $trial: the last restart did not resume from $newest"
  done
  cmp -s "$out/model.safetensors" "$WORK/reference/model.safetensors" ||
    fail "trial $trial: the final model.safetensors differs from the uninterrupted run's"
  if ((trial % 10 == 0)); then report "after $trial trials"; fi
done
report "PASS: $TRIALS trials"
