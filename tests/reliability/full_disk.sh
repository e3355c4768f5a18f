#!/usr/bin/env bash
# Full disks and unwritable directories (docs/reliability.md, "Full disk"). Training writes
# into a small tmpfs that fills up during a save, or into a directory made read-only while the
# run goes on. Each run must stop with status 1 (an error, not a crash or an abort), an error
# naming the path (and, for a full disk, the bytes the file needs and those free), and leave
# the last good checkpoint whole: it still loads. Cases:
#   checkpoint      1 rank: checkpoint-3 fits, checkpoint-6 fills the disk
#   checkpoint_2    the same with 2 ranks under mpirun
#   final_model     no checkpoints; the final model.safetensors does not fit
#   unwritable      the output directory loses its write permission after checkpoint-3
# The tmpfs is mounted in a mount namespace of its own (unshare), so nothing stays mounted
# should the test be killed; where namespaces are not permitted, the test reports a skip (77).
#   full_disk.sh STRATA_BINARY SOURCE_DIR
set -euo pipefail
STRATA=${1:?usage: full_disk.sh STRATA_BINARY SOURCE_DIR}
SRC=${2:?}
if [[ -z ${STRATA_IN_MOUNT_NS:-} ]]; then
  if ! unshare --mount --propagation private true 2> /dev/null; then
    echo "SKIP: cannot create a mount namespace here (unshare --mount), so no small tmpfs to fill"
    exit 77
  fi
  exec unshare --mount --propagation private env STRATA_IN_MOUNT_NS=1 bash "$0" "$@"
fi
source "$SRC/tests/jobs/tiny_training.sh"
WORK=$(mktemp -d)
mounts=()
trap 'for m in "${mounts[@]}"; do umount "$m"; done; [[ -n "${KEEP:-}" ]] || rm -rf "$WORK"' EXIT
chmod 755 "$WORK"  # the unwritable case runs as another user, who must read the inputs
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
echo "work dir: $WORK"
tiny_training "$WORK" 9 8
sed -i 's/^save_steps: .*/save_steps: 3/; /^save_total_limit/d; /^output_dir/d' "$WORK/train.yaml"
echo "num_threads: 1" >> "$WORK/train.yaml"

# disk NAME SIZE: a fresh tmpfs of SIZE at $WORK/NAME.
disk() {
  mkdir -p "$WORK/$1"
  mount -t tmpfs -o "size=$2" tmpfs "$WORK/$1"
  mounts+=("$WORK/$1")
}

# expect_error LOG RC PATTERN...: the run ended with status 1 and its log holds each pattern.
expect_error() {
  local log=$1 rc=$2 p
  shift 2
  [[ $rc == 1 ]] || { tail -20 "$log"; fail "$log: exit status $rc, expected 1 (an error, not a crash)"; }
  for p in "$@"; do grep -q -- "$p" "$log" || { tail -20 "$log"; fail "$log: no '$p' in the error"; }; done
}

# loads DIR: a run resuming from checkpoint DIR, with nothing left to train, loads all of it.
loads() {
  local n=${1##*checkpoint-}
  "$STRATA" train "$WORK/train.yaml" --output_dir "$WORK/probe" --overwrite_output_dir true --max_steps "$n" \
    --resume_from_checkpoint "$1" > "$WORK/probe.log" 2>&1 || { tail -5 "$WORK/probe.log"; fail "$1 does not load"; }
}

# no_debris OUT: no half-written checkpoint is left behind.
no_debris() {
  if compgen -G "$1/.tmp-checkpoint-*" > /dev/null; then fail "$1: a .tmp-checkpoint- directory was left"; fi
  [[ $(ls -d "$1"/checkpoint-*) == "$1/checkpoint-3" ]] || fail "$1: expected checkpoint-3 alone, found $(ls "$1")"
}

# A checkpoint takes about 3.5 MB (1.1 MB of weights, 2.2 MB of Adam state, the tokenizer):
# 6 MB hold checkpoint-3 and not checkpoint-6.
for ranks in 1 2; do
  name=checkpoint$([[ $ranks == 1 ]] || echo "_$ranks")
  disk "$name" 6m
  out=$WORK/$name/out
  rc=0
  if [[ $ranks == 1 ]]; then
    "$STRATA" train "$WORK/train.yaml" --output_dir "$out" > "$WORK/$name.log" 2>&1 || rc=$?
  else
    timeout 120 mpirun --oversubscribe -np 2 "$STRATA" train "$WORK/train.yaml" --output_dir "$out" \
      --per_device_train_batch_size 4 > "$WORK/$name.log" 2>&1 || rc=$?
  fi
  expect_error "$WORK/$name.log" $rc "saving checkpoint-6 into $out failed" "No space left on device" \
    "bytes free without it" "the file needs [0-9]* bytes" "The last good checkpoint, $out/checkpoint-3 ([0-9]* bytes), is intact"
  no_debris "$out"
  loads "$out/checkpoint-3"
  echo "ok: $name: $(grep -o 'error: .*' "$WORK/$name.log" | head -1)"
done

# The final model: 1 MB does not hold its 1.1 MB of weights.
disk final 1m
rc=0
"$STRATA" train "$WORK/train.yaml" --output_dir "$WORK/final/out" --save_strategy no > "$WORK/final.log" 2>&1 || rc=$?
expect_error "$WORK/final.log" $rc "$WORK/final/out/model.safetensors: write to .* failed after [0-9]* of 1110032 bytes" \
  "No space left on device; the file needs 1110032 bytes"
[[ ! -e $WORK/final/out/model.safetensors ]] || fail "a partial model.safetensors was left"
echo "ok: final_model: $(grep -o 'error: .*' "$WORK/final.log" | head -1)"

# Unwritable: the run goes on as an unprivileged user (root ignores permissions) and its output
# directory loses its write permission once checkpoint-3 is complete.
as_user=()
if [[ $(id -u) == 0 ]]; then as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups); fi
out=$WORK/unwritable/out
mkdir -p "$out"
chmod 777 "$WORK/unwritable" "$out"
rc=0
"${as_user[@]}" "$STRATA" train "$WORK/train.yaml" --output_dir "$out" --overwrite_output_dir true --max_steps 3000 \
  > "$WORK/unwritable.log" 2>&1 &
pid=$!
for _ in $(seq 600); do [[ -d $out/checkpoint-3 ]] && break; sleep 0.05; done
chmod 555 "$out"
wait $pid || rc=$?
chmod 755 "$out"
expect_error "$WORK/unwritable.log" $rc "saving checkpoint-[0-9]* into $out failed" "Permission denied" \
  "The last good checkpoint, $out/checkpoint-[0-9]* ([0-9]* bytes), is intact"
last=$(grep -o "The last good checkpoint, [^ ]*" "$WORK/unwritable.log" | awk '{print $5}' | tr -d ,)
loads "$last"
echo "ok: unwritable: $(grep -o 'error: .*' "$WORK/unwritable.log" | head -1)"
echo "PASS"
