# Timed `strata train` runs for the parallelism benches (sourced, not run): the caller sets
# WORK, STEPS and REPEAT and runs from the repository root.
#   gpt2_8l_job SCRIPT_NAME                                 WORK/job.yaml: the 8-layer GPT-2 (below)
#   run NAME PROCESSES THREADS [strata --set options...]   prints "ms bubble theory"
#   record LABEL "ms bubble theory"                        keeps a row: MS, BUBBLE, THEORY, ORDER
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# The job both benches time: examples/pipeline/gpt2-8l (random init), causal LM on the first
# 3000 texts of examples/corpus in blocks of 128 tokens, batch 16 per replica, no evaluation or
# saving. Checks the binary and warns when a compiler shares the cores.
gpt2_8l_job() {
  [[ -x build/strata ]] || { echo "$1: build/strata is missing (cmake --build build)" >&2; exit 1; }
  if pgrep -x cc1plus >/dev/null || pgrep -x ninja >/dev/null; then
    echo "$1: warning: a compiler is running; the numbers will be low" >&2
  fi
  mkdir -p "$WORK/logs"
  python3 -c "import gzip, itertools, sys; sys.stdout.writelines(itertools.islice(gzip.open(sys.argv[1], 'rt'), 3000))" \
    examples/corpus/pretrain.txt.gz > "$WORK/train.txt"
  cat > "$WORK/job.yaml" <<YAML
model_name_or_path: examples/pipeline/gpt2-8l
tokenizer_name: examples/tokenizers/bpe-8k
train_file: $WORK/train.txt
block_size: 128
overwrite_output_dir: true
do_eval: false
save_strategy: "no"
per_device_train_batch_size: 16
learning_rate: 1.0e-3
logging_steps: 1
seed: 42
YAML
}

# name, processes, threads, strata --set options...: one run per repeat; prints "ms bubble theory"
run() {
  local name=$1 np=$2 threads=$3
  shift 3
  local ms=() bubble=- theory=-
  for ((r = 1; r <= REPEAT; ++r)); do
    local log=$WORK/logs/$name.$r.log out=$WORK/$name
    local args=(train "$WORK/job.yaml" --set output_dir="$out" --set max_steps="$STEPS" --set num_threads="$threads" "$@")
    local cmd=(build/strata "${args[@]}")
    [[ $np == 1 ]] || cmd=(mpirun --oversubscribe -np "$np" -x OMP_NUM_THREADS="$threads" build/strata "${args[@]}")
    set +e
    OMP_NUM_THREADS=$threads "${cmd[@]}" 2>&1 | while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done > "$log"
    local rc=${PIPESTATUS[0]}
    set -e
    if [[ $rc != 0 ]]; then
      echo "$name: FAILED (rc $rc): ${cmd[*]}" >&2; tail -n 15 "$log" | cut -d' ' -f2- >&2; exit 1
    fi
    ms+=("$(awk -f bench/steady_ms_per_step.awk "$log" | cut -d' ' -f2)")
    bubble=$(python3 -c "import json;print(json.load(open('$out/train_results.json')).get('pipeline_bubble_measured','-'))")
    theory=$(python3 -c "import json;print(json.load(open('$out/train_results.json')).get('pipeline_bubble_theoretical','-'))")
  done
  echo "$(printf '%s\n' "${ms[@]}" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}') $bubble $theory"
}

declare -A MS BUBBLE THEORY
ORDER=()
record() {  # name, "ms bubble theory"
  local ms bubble theory
  read -r ms bubble theory <<< "$2"
  MS["$1"]=$ms
  BUBBLE["$1"]=$bubble
  THEORY["$1"]=$theory
  ORDER+=("$1")
  echo "  $1: ${MS[$1]} ms/step (median of $REPEAT), bubble measured ${BUBBLE[$1]}, theory ${THEORY[$1]}" >&2
}
