#!/bin/bash
# hf_trainer_peer.sh -- the real Hugging Face Trainer on strata's spam fine-tuning task (issue 7's
# peer): bench/hf_trainer_spam.py trains BertForSequenceClassification (examples/spam/bert-tiny,
# random init, seed 42) with transformers.Trainer 5.24.0 + accelerate 1.15.0 on torch 2.15.0
# (the benchmark environment of scripts/install_bench_deps.sh, from PyPI; CPU, 2 threads), the
# configuration of examples/spam/demo.yaml at 6 epochs and peak LR 5e-4 ("B6"), then evaluates
# the validation set and predicts the test set. Runs under /usr/bin/time -v for the process's
# peak RSS.
#
# Usage:
#   bench/hf_trainer_peer.sh OUTDIR [hf_trainer_spam.py args...]
# e.g.
#   bench/hf_trainer_peer.sh bench/results/hf_trainer
#   smoke test: bench/hf_trainer_peer.sh bench/results/hf_smoke --max-steps 20 --eval-steps 10
# Env: THREADS (default 2), WORKERS (dataloader_num_workers, default 1 as demo.yaml),
#      EPOCHS (6), LR (5e-4), SAVE_STRATEGY (epoch: a checkpoint per epoch, 2 kept, best by F1
#      loaded at the end, as demo.yaml; no: none).
# Writes OUTDIR/hf_trainer_spam.json (versions, threads, tokenize_s, train_runtime,
# train_samples_per_second, evals[] with epoch / f1 / eval_runtime / elapsed_s_since_start,
# time_to_f1_095, final_eval runtime and samples/s, test F1, peak RSS), OUTDIR/hf_trainer_spam.time
# (/usr/bin/time -v), OUTDIR/hf_trainer_spam.log and the Trainer's output_dir OUTDIR/run.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PY=$("$HERE/../scripts/bench_python.sh")
OUT=${1:?usage: $0 OUTDIR [hf_trainer_spam.py args...]}
shift
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
THREADS=${THREADS:-2}
export OMP_NUM_THREADS=$THREADS
export TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
export HF_HOME=${HF_HOME:-$OUT/hf-home}

echo "hf trainer peer: $(nproc) cores, threads=$THREADS, workers=${WORKERS:-1}, load: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$OUT/hf_trainer_spam.json" "$OUT/run"
/usr/bin/time -v -o "$OUT/hf_trainer_spam.time" "$PY" "$HERE/hf_trainer_spam.py" --out "$OUT" \
    --repo "$HERE/.." --threads "$THREADS" --workers "${WORKERS:-1}" --epochs "${EPOCHS:-6}" --lr "${LR:-5e-4}" \
    --save-strategy "${SAVE_STRATEGY:-epoch}" "$@" 2>&1 | tee "$OUT/hf_trainer_spam.log" \
  | grep -E --line-buffered '^(tokenized|torch |\[eval\]|train [0-9]|\{)' || true
[[ -f "$OUT/hf_trainer_spam.json" ]] || { echo "hf_trainer_spam.py FAILED, see $OUT/hf_trainer_spam.log" >&2; tail -20 "$OUT/hf_trainer_spam.log" >&2; exit 1; }
rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$OUT/hf_trainer_spam.time")
echo "peak RSS (/usr/bin/time -v, largest of the process and its dataloader worker): $((rss_kb / 1024)) MiB"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
