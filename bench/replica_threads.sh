#!/bin/bash
# replica_threads.sh -- replica threads against threading each operation, side by side: the
# spam job of examples/spam/demo.yaml (BERT L2 H128, batch 32 x 128, 2 threads) trained for
# EPOCHS epochs with no evaluation or checkpoint, `replica_threads: 1` (every kernel and
# product threaded over both cores) and `replica_threads: 0` (auto: 2 replicas of 16 rows, one
# thread each) alternated ROUNDS times, so that a burst of load on a shared host hits both.
# With MPI=1 a third column: the same batch as 2 MPI ranks of 16 rows and 1 thread each
# (data parallelism across processes, the gradients all-reduced by OpenMPI).
#
#   bench/replica_threads.sh STRATA_BIN [OUT_DIR]      (ROUNDS=3 EPOCHS=2 MPI=1 by default)
#
# Prints each run's train_samples_per_second, then the medians and their ratios; writes
# OUT_DIR/replica_threads.json when OUT_DIR is given. Results: docs/parallelism.md.
set -euo pipefail
STRATA=${1:?usage: replica_threads.sh STRATA_BIN [OUT_DIR]}
OUT=${2:-}
ROUNDS=${ROUNDS:-3} EPOCHS=${EPOCHS:-2} MPI=${MPI:-1}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
sets=(--set "num_train_epochs=$EPOCHS" --set eval_strategy=no --set save_strategy=no
      --set load_best_model_at_end=false --set do_eval=false --set do_predict=false --set num_threads=2
      --set report_to=none)

rate() {  # log file -> train_samples_per_second
  sed -n 's/^ *train_samples_per_second *= *//p' "$1" | tail -1
}
declare -A runs=([ops]="" [replicas]="" [mpi]="")
mpi=-
for ((r = 1; r <= ROUNDS; ++r)); do
  "$STRATA" train examples/spam/demo.yaml "${sets[@]}" --set replica_threads=1 --set "output_dir=$WORK/ops" \
    > "$WORK/ops.log" 2>&1
  ops=$(rate "$WORK/ops.log")
  runs[ops]+="$ops "
  "$STRATA" train examples/spam/demo.yaml "${sets[@]}" --set replica_threads=0 --set "output_dir=$WORK/rep" \
    > "$WORK/rep.log" 2>&1
  grep -q "Replica threads = 2" "$WORK/rep.log" || { echo "replica_threads.sh: auto did not pick 2 replicas" >&2; exit 1; }
  rep=$(rate "$WORK/rep.log")
  runs[replicas]+="$rep "
  if [[ "$MPI" == 1 ]]; then
    mpirun --oversubscribe --bind-to none -np 2 "$STRATA" train examples/spam/demo.yaml "${sets[@]}" \
      --set num_threads=1 --set per_device_train_batch_size=16 --set "output_dir=$WORK/mpi" > "$WORK/mpi.log" 2>&1
    mpi=$(rate "$WORK/mpi.log")
    runs[mpi]+="$mpi "
  fi
  echo "round $r: threaded operations $ops, replica threads $rep, 2 MPI ranks $mpi samples/s"
done
python3 - "$OUT" "${runs[ops]}" "${runs[replicas]}" "${runs[mpi]}" "$(nproc)" <<'PY'
import json, statistics, sys
out, ops, rep, mpi, cores = sys.argv[1], *[[float(x) for x in a.split()] for a in sys.argv[2:5]], sys.argv[5]
m = {k: statistics.median(v) for k, v in (("ops", ops), ("replicas", rep), ("mpi", mpi)) if v}
print(f"train samples/s, median of {len(ops)} (spam job, 2 threads, {cores} cores):")
print(f"  threaded operations (replica_threads: 1)  {m['ops']:7.1f}   runs {ops}")
print(f"  replica threads (auto: 2 x 16 rows)       {m['replicas']:7.1f}   runs {rep}   x{m['replicas'] / m['ops']:.2f}")
if "mpi" in m:
    print(f"  2 MPI ranks x 1 thread (16 rows each)     {m['mpi']:7.1f}   runs {mpi}   x{m['mpi'] / m['ops']:.2f}")
if out:
    with open(f"{out}/replica_threads.json", "w") as f:
        json.dump({"runs": {"ops": ops, "replicas": rep, "mpi": mpi}, "median": m, "cores": int(cores)}, f, indent=1)
PY
