#!/bin/bash
# hf_trainer_peer.sh -- the real Hugging Face Trainer on strata's spam fine-tuning task (issue 7's
# peer): bench/hf_trainer_spam.py trains BertForSequenceClassification (examples/spam/bert-tiny,
# random init, seed 42) with transformers.Trainer v4.36.2 + accelerate v0.25.0 on Debian's torch
# 1.13 (CPU, 2 threads, BLAS = OpenBLAS OpenMP build: Debian torch links the system libblas.so.3,
# and the default reference/pthread BLAS is several times slower), the configuration of
# examples/spam/demo.yaml at 6 epochs and peak LR 5e-4 ("B6"), then evaluates the validation set
# and predicts the test set. Runs under /usr/bin/time -v for the process's peak RSS.
#
# Usage:
#   bench/hf_trainer_peer.sh TRANSFORMERS_GITDIR HUB_GITDIR ACCELERATE_GITDIR OUTDIR [hf_trainer_spam.py args...]
# e.g.
#   bench/hf_trainer_peer.sh /work/.mirror/tianhua2+huggingface_llama3/repo \
#       /work/.mirror/huggingface+huggingface_hub/repo /work/.mirror/huggingface+accelerate/repo \
#       bench/results/hf_trainer
#   smoke test: ... bench/results/hf_smoke --max-steps 20 --eval-steps 10
# The git dirs: transformers tag v4.36.2 and huggingface_hub tag v0.19.4 (the oracle's, see
# tests/fixtures/make_fixtures.sh; fetch github:tianhua2/huggingface_llama3 and
# github:huggingface/huggingface_hub) and accelerate tag v0.25.0 (fetch github:huggingface/accelerate;
# transformers' Trainer needs accelerate >= 0.21). accelerate is pure Python: its tag's src/ is
# exported to $HF_DEST/accelerate-0.25.0/src with a metadata-only accelerate-0.25.0.dist-info
# beside it (transformers checks the installed version with importlib.metadata at import), as
# setup_hf_env.sh does for transformers and huggingface_hub.
# Needs: Debian python3-torch python3-psutil (+ numpy yaml regex requests filelock tqdm packaging),
# libopenblas0-openmp, GNU time (scripts/install_bench_deps.sh), the oracle harness (HF_ORACLE,
# default /work/shared/tools/hf-oracle) for setup_hf_env.sh and its shims.
# Env: HF_DEST (default /tmp/hf), TORCH_BLAS_DIR (default /usr/lib/x86_64-linux-gnu/openblas-openmp),
#      THREADS (default 2), WORKERS (dataloader_num_workers, default 1 as demo.yaml),
#      EPOCHS (6), LR (5e-4), SAVE_STRATEGY (epoch: a checkpoint per epoch, 2 kept, best by F1
#      loaded at the end, as demo.yaml; no: none).
# Writes OUTDIR/hf_trainer_spam.json (versions, threads, tokenize_s, train_runtime,
# train_samples_per_second, evals[] with epoch / f1 / eval_runtime / elapsed_s_since_start,
# time_to_f1_095, final_eval runtime and samples/s, test F1, peak RSS), OUTDIR/hf_trainer_spam.time
# (/usr/bin/time -v), OUTDIR/hf_trainer_spam.log and the Trainer's output_dir OUTDIR/run.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ORACLE=${HF_ORACLE:-/work/shared/tools/hf-oracle}
if [[ $# -lt 4 ]]; then
  echo "usage: $0 TRANSFORMERS_GITDIR HUB_GITDIR ACCELERATE_GITDIR OUTDIR [hf_trainer_spam.py args...]" >&2
  exit 2
fi
TF=$1 HUB=$2 ACCEL=$3 OUT=$4
shift 4
DEST=${HF_DEST:-/tmp/hf}
eval "$("$ORACLE/setup_hf_env.sh" "$TF" "$HUB" "$DEST")"
ADEST=$DEST/accelerate-0.25.0
git --git-dir="$ACCEL" rev-parse -q --verify 'v0.25.0^{commit}' >/dev/null \
  || { echo "no tag v0.25.0 in $ACCEL" >&2; exit 1; }
if [[ ! -f "$ADEST/src/accelerate/__init__.py" ]]; then
  rm -rf "$ADEST" && mkdir -p "$ADEST"
  git --git-dir="$ACCEL" archive v0.25.0 src | tar -x -C "$ADEST"
fi
if [[ ! -f "$ADEST/meta/accelerate-0.25.0.dist-info/METADATA" ]]; then
  mkdir -p "$ADEST/meta/accelerate-0.25.0.dist-info"
  printf 'Metadata-Version: 2.1\nName: accelerate\nVersion: 0.25.0\nSummary: Metadata only: the accelerate v0.25.0 source itself is exported from its git tag to ../src (bench/hf_trainer_peer.sh).\n' \
    > "$ADEST/meta/accelerate-0.25.0.dist-info/METADATA"
  echo accelerate > "$ADEST/meta/accelerate-0.25.0.dist-info/top_level.txt"
fi
export PYTHONPATH="$PYTHONPATH:$ADEST/meta:$ADEST/src"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export LD_LIBRARY_PATH=${TORCH_BLAS_DIR:-/usr/lib/x86_64-linux-gnu/openblas-openmp}
THREADS=${THREADS:-2}
export OMP_NUM_THREADS=$THREADS
export TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
export HF_HOME=${HF_HOME:-$DEST/home}

echo "hf trainer peer: $(nproc) cores, threads=$THREADS, workers=${WORKERS:-1}, BLAS dir $LD_LIBRARY_PATH, load: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$OUT/hf_trainer_spam.json" "$OUT/run"
/usr/bin/time -v -o "$OUT/hf_trainer_spam.time" /usr/bin/python3 "$HERE/hf_trainer_spam.py" --out "$OUT" \
    --repo "$HERE/.." --threads "$THREADS" --workers "${WORKERS:-1}" --epochs "${EPOCHS:-6}" --lr "${LR:-5e-4}" \
    --save-strategy "${SAVE_STRATEGY:-epoch}" "$@" 2>&1 | tee "$OUT/hf_trainer_spam.log" \
  | grep -E --line-buffered '^(tokenized|torch |\[eval\]|train [0-9]|\{)' || true
[[ -f "$OUT/hf_trainer_spam.json" ]] || { echo "hf_trainer_spam.py FAILED, see $OUT/hf_trainer_spam.log" >&2; tail -20 "$OUT/hf_trainer_spam.log" >&2; exit 1; }
rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$OUT/hf_trainer_spam.time")
echo "peak RSS (/usr/bin/time -v, largest of the process and its dataloader worker): $((rss_kb / 1024)) MiB"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
