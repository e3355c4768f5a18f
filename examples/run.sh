#!/usr/bin/env bash
# One command per example (docs/examples.md). Run from anywhere; works in the repository root.
# Builds nothing: it runs build/strata (./scripts/bootstrap.sh or cmake builds it).
#
#   examples/run.sh mlm                  masked-LM pretraining on examples/corpus -> out/mlm
#   examples/run.sh finetune-pretrained  Austen novel attribution from out/mlm -> out/austen-pretrained
#   examples/run.sh finetune-random      the same from random init -> out/austen-random
#   examples/run.sh compare              mlm (unless out/mlm has a model), both fine-tunes, and the table
#   examples/run.sh clm                  GPT-2 causal-LM pretraining on examples/corpus -> out/clm
#   examples/run.sh generate [PROMPT]    continue PROMPT with out/clm
#   examples/run.sh qa | qa_v2           extractive QA over WordNet glosses -> out/qa, out/qa_v2
#   examples/run.sh pos                  Brown-corpus POS tagging -> out/pos
#
# Anything after the name (for train jobs) goes to strata as is, e.g.
#   examples/run.sh pos --set num_train_epochs=1
set -euo pipefail
cd "$(dirname "$0")/.."
STRATA=${STRATA:-build/strata}
[[ -x $STRATA ]] || { echo "run.sh: $STRATA not found; build first (./scripts/bootstrap.sh)" >&2; exit 1; }
name=${1:-}
shift || true

train() { echo "+ $STRATA train $*" >&2; "$STRATA" train "$@"; }

# eval_accuracy and predict_accuracy (the test file) of a finished fine-tune, for the comparison table.
figures() {
  local f=$1/all_results.json
  printf '%-26s' "$2"
  for k in eval_accuracy predict_accuracy predict_f1_macro train_runtime; do
    printf ' %10s' "$(grep -oE "\"$k\": [-0-9.e]+" "$f" | awk '{printf "%.4g", $2}')"
  done
  echo
}

case $name in
  mlm) train examples/pretrain/mlm_pretrain.yaml "$@" ;;
  finetune-pretrained)
    [[ -f out/mlm/model.safetensors ]] || { echo "run.sh: no out/mlm/model.safetensors; run 'examples/run.sh mlm' first" >&2; exit 1; }
    train examples/austen/finetune_pretrained.yaml "$@" ;;
  finetune-random) train examples/austen/finetune_random.yaml "$@" ;;
  compare)
    [[ -f out/mlm/model.safetensors ]] || train examples/pretrain/mlm_pretrain.yaml
    train examples/austen/finetune_pretrained.yaml "$@"
    train examples/austen/finetune_random.yaml "$@"
    echo
    printf '%-26s %10s %10s %10s %10s\n' "Austen attribution" eval_acc test_acc test_f1_mac train_s
    figures out/austen-pretrained "pretrained (out/mlm)"
    figures out/austen-random "random init" ;;
  clm) train examples/pretrain/clm.yaml "$@" ;;
  generate)
    prompt=${1:-"It is a truth universally acknowledged, that"}
    echo "+ $STRATA generate --model out/clm --prompt \"$prompt\" --max-new-tokens 60" >&2
    "$STRATA" generate --model out/clm --prompt "$prompt" --max-new-tokens 60 ;;
  qa) train examples/qa/qa.yaml "$@" ;;
  qa_v2) train examples/qa/qa_v2.yaml "$@" ;;
  pos) train examples/pos/pos.yaml "$@" ;;
  *)
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
    exit 2 ;;
esac
