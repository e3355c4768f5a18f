#!/bin/bash
# llmc_peer.sh -- llm.c's CPU trainer (train_gpt2.c) as a peer for the GPT-2 rows of
# bench_train_step: step times of GPT-2 124M training, fp32, on this machine.
#
#   bench/llmc_peer.sh LLMC_CHECKOUT OUTDIR
#   e.g. bench/llmc_peer.sh /work/.mirror/karpathy+llm.c/repo bench/results/llmc
#
# LLMC_CHECKOUT is a work tree of github.com/karpathy/llm.c or its git dir (then HEAD is used).
# The script only drives llm.c; nothing of it is kept here. It:
#   1. takes train_gpt2.c, llmc/ and the Makefile from the checkout into OUTDIR/src-BxT and
#      builds the CPU trainer with llm.c's own `make train_gpt2` (-Ofast -march=native, OpenMP);
#   2. writes the inputs train_gpt2.c's main() opens (llmc_inputs.py: a random-init GPT-2 124M
#      checkpoint and random token files; no download);
#   3. runs it with OMP_NUM_THREADS=THREADS, stops it after STEPS+1 training steps, and takes
#      the median of its "step N: train loss L (took T ms)" lines, step 0 left out (it allocates
#      the gradient and AdamW buffers).
# main() hard-codes B = 4, T = 64 (its default, the shape issue 8 quotes). Other shapes are run by
# rewriting those two declarations in the copied train_gpt2.c; the script stops if either is missing.
# llm.c's step: forward, cross-entropy, backward, AdamW (lr 1e-4, no weight decay); it has no
# dropout and computes logits over the padded vocabulary (50304).
#
# Env: SHAPES (default "4x64 4x256"), STEPS (timed steps per shape, default 6), THREADS (default 2).
# Writes OUTDIR/llmc-BxT.log (the trainer's output), OUTDIR/summary.json; prints one line per shape.
set -euo pipefail
SRC=${1:?usage: llmc_peer.sh LLMC_CHECKOUT OUTDIR}
OUT=${2:?usage: llmc_peer.sh LLMC_CHECKOUT OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
SHAPES=${SHAPES:-4x64 4x256}
STEPS=${STEPS:-6}
THREADS=${THREADS:-2}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# Copies the three things the CPU build needs into $1.
checkout() {
  mkdir -p "$1"
  if [[ -f "$SRC/train_gpt2.c" ]]; then
    cp -r "$SRC/train_gpt2.c" "$SRC/llmc" "$SRC/Makefile" "$1/"
    COMMIT=$(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo "work tree")
  else
    git --git-dir="$SRC" archive HEAD train_gpt2.c llmc Makefile | tar -x -C "$1"
    COMMIT=$(git --git-dir="$SRC" rev-parse HEAD)
  fi
}

# Sets main()'s `int B = 4;` / `int T = 64;` in $1/train_gpt2.c to $2 / $3.
set_shape() {
  local f=$1/train_gpt2.c
  for decl in "int B = 4;" "int T = 64;"; do
    [[ $(grep -c "^ *$decl" "$f") == 1 ]] || { echo "llmc_peer: '$decl' not found once in $f; this llm.c" \
      "version sets the batch shape differently, adapt set_shape()" >&2; exit 1; }
  done
  sed -i -e "s/^\( *\)int B = 4;/\1int B = $2;/" -e "s/^\( *\)int T = 64;/\1int T = $3;/" "$f"
}

rm -f "$OUT/summary.json"
RUN="$OUT/run"  # train_gpt2 opens its inputs relative to the working directory
/usr/bin/python3 "$HERE/llmc_inputs.py" "$RUN"
echo "llm.c peer: $(nproc) cores, threads=$THREADS, load: $(cut -d' ' -f1-3 /proc/loadavg)"
for shape in $SHAPES; do
  B=${shape%x*} T=${shape#*x}
  dir="$OUT/src-$shape"
  rm -rf "$dir"
  checkout "$dir"
  [[ "$shape" == 4x64 ]] || set_shape "$dir" "$B" "$T"
  make -s -C "$dir" train_gpt2 > "$OUT/llmc-$shape.build.log" 2>&1 \
    || { echo "llmc_peer: build failed, see $OUT/llmc-$shape.build.log" >&2; exit 1; }
  flags=$(make -n -C "$dir" -B train_gpt2 2>/dev/null | grep -m1 'train_gpt2.c' || true)
  log="$OUT/llmc-$shape.log"
  (cd "$RUN" && OMP_NUM_THREADS=$THREADS exec stdbuf -oL "$dir/train_gpt2") > "$log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if (( $(grep -c '^step [0-9]*: train loss' "$log" || true) > STEPS )); then
      kill "$pid"
      break
    fi
    sleep 1
  done
  wait "$pid" || true
  /usr/bin/python3 - "$OUT" "$shape" "$B" "$T" "$THREADS" "$COMMIT" "$flags" <<'PYEOF'
import json, os, re, statistics, sys
out, shape, B, T, threads, commit, flags = sys.argv[1:]
B, T = int(B), int(T)
log = open(os.path.join(out, f"llmc-{shape}.log")).read()
steps = [(int(s), float(ms)) for s, ms in re.findall(r"^step (\d+): train loss \S+ \(took ([\d.]+) ms\)", log, re.M)]
ms = [t for s, t in steps if s > 0]
if not ms:
    sys.exit(f"llmc_peer: no timed step in {out}/llmc-{shape}.log:\n" + log[-2000:])
med = statistics.median(ms)
row = {"name": f"llmc b{B} t{T}", "batch": B, "seq": T, "threads": int(threads), "steps": len(ms),
       "ms_per_step": {"median": med, "min": min(ms), "max": max(ms)}, "tokens_per_s": B * T / med * 1e3,
       "llmc_commit": commit, "compile": flags, "times_ms": ms}
summ = os.path.join(out, "summary.json")
rows = json.load(open(summ)) if os.path.exists(summ) else []
rows = [r for r in rows if r["name"] != row["name"]] + [row]
json.dump(rows, open(summ, "w"), indent=1)
print(f"{row['name']:16s} {med:9.1f} ms/step (median of {len(ms)}; min {min(ms):.1f} max {max(ms):.1f})  "
      f"{row['tokens_per_s']:7.1f} tokens/s", flush=True)
PYEOF
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
