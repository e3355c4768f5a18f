# Running `strata train` jobs for the MPI equivalence scripts (sourced, not run). The script
# sets STRATA (the binary) and WORK (a scratch directory) and defines
#   job NAME RANKS PER_DEVICE_BATCH EXTRA_YAML   writing $WORK/NAME.yaml (output_dir $WORK/NAME)

# NAME RANKS [strata options...]: one process, or RANKS under mpirun; output in $WORK/NAME.log.
run() {
  local name=$1 ranks=$2
  shift 2
  if [[ $ranks == 1 ]]; then
    "$STRATA" train "$WORK/$name.yaml" "$@" > "$WORK/$name.log" 2>&1
  else
    mpirun --oversubscribe -np "$ranks" "$STRATA" train "$WORK/$name.yaml" "$@" > "$WORK/$name.log" 2>&1
  fi || { echo "FAILED: $name"; tail -20 "$WORK/$name.log"; exit 1; }
}

# NAME RANKS PER_DEVICE_BATCH CHECKPOINT EXTRA_YAML: a run that resumes from a copy of CHECKPOINT.
resume() {
  mkdir -p "$WORK/$1"
  cp -r "$4" "$WORK/$1/"
  job "$1" "$2" "$3" "$5
resume_from_checkpoint: latest"
  run "$1" "$2"
}
