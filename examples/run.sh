#!/usr/bin/env bash
# One command per example (docs/examples.md). Run from anywhere; works in the repository root.
# Builds nothing: it runs build/strata (./scripts/bootstrap.sh or cmake builds it).
#
#   examples/run.sh mlm                  masked-LM pretraining on examples/corpus -> out/mlm
#   examples/run.sh compare              the held-out comparison: mlm (unless out/mlm has a model),
#                                        then WordNet supersense fine-tuned from out/mlm and from
#                                        random init -> out/supersense-{pretrained,random}, and a table
#   examples/run.sh compare-austen       the same on Austen novel attribution -> out/austen-*
#   examples/run.sh supersense-pretrained | supersense-random | austen-pretrained | austen-random
#                                        one arm of a comparison
#   examples/run.sh clm                  GPT-2 causal-LM pretraining on examples/corpus -> out/clm
#   examples/run.sh generate [PROMPT]    continue PROMPT with out/clm
#   examples/run.sh qa                   extractive QA over WordNet glosses, fine-tuning the pretrained
#                                        all-MiniLM-L6-v2 (fetched by scripts/fetch_pretrained.sh) -> out/qa
#   examples/run.sh qa-random | qa_v2    the same from random init; with unanswerable questions
#                                        -> out/qa-random, out/qa_v2
#   examples/run.sh pos                  Brown-corpus POS tagging -> out/pos
#   examples/run.sh gloss2word           sequence to sequence: a tiny BART from random init names the
#                                        words a WordNet gloss defines, scored by generating (ROUGE)
#                                        -> out/gloss2word
#   examples/run.sh spam-minilm | supersense-minilm | pos-minilm
#                                        spam, supersense, POS fine-tuning all-MiniLM-L6-v2 -> out/*-minilm
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

need_mlm() {
  [[ -f out/mlm/model.safetensors ]] || { echo "run.sh: no out/mlm/model.safetensors; run 'examples/run.sh mlm' first" >&2; exit 1; }
}

# The real pretrained checkpoint the *-minilm jobs and qa start from.
need_minilm() { scripts/fetch_pretrained.sh; }

# A comparison: pretrain unless out/mlm has a model, fine-tune both arms, print the table.
compare() {
  local task=$1
  shift
  [[ -f out/mlm/model.safetensors ]] || train examples/pretrain/mlm_pretrain.yaml
  train examples/$task/finetune_pretrained.yaml "$@"
  train examples/$task/finetune_random.yaml "$@"
  echo
  printf '%-22s %9s %9s %9s %9s\n' "$task" eval_acc test_acc test_f1m train_s
  for arm in pretrained random; do
    printf '%-22s' "$arm"
    for k in eval_accuracy predict_accuracy predict_f1_macro train_runtime; do
      printf ' %9s' "$(grep -oE "\"$k\": [-0-9.e]+" "out/$task-$arm/all_results.json" | awk '{printf "%.4g", $2}')"
    done
    echo
  done
}

case $name in
  mlm) train examples/pretrain/mlm_pretrain.yaml "$@" ;;
  compare) compare supersense "$@" ;;
  compare-austen) compare austen "$@" ;;
  supersense-pretrained | austen-pretrained) need_mlm; train examples/${name%-*}/finetune_pretrained.yaml "$@" ;;
  supersense-random | austen-random) train examples/${name%-*}/finetune_random.yaml "$@" ;;
  clm) train examples/pretrain/clm.yaml "$@" ;;
  generate)
    prompt=${1:-"It is a truth universally acknowledged, that"}
    echo "+ $STRATA generate out/clm --prompt \"$prompt\" --max-new-tokens 60" >&2
    "$STRATA" generate out/clm --prompt "$prompt" --max-new-tokens 60 ;;
  qa) need_minilm; train examples/qa/qa.yaml "$@" ;;
  qa-random) train examples/qa/qa_random.yaml "$@" ;;
  spam-minilm | supersense-minilm | pos-minilm) need_minilm; train examples/${name%-*}/minilm.yaml "$@" ;;
  qa_v2) train examples/qa/qa_v2.yaml "$@" ;;
  pos) train examples/pos/pos.yaml "$@" ;;
  gloss2word)
    # the training split (0.9 MB) is made from the shared corpus, not kept in the repository
    [[ -f examples/seq2seq/data/train.jsonl.gz ]] || python3 examples/seq2seq/make_data.py ../shared/data/corpus/wordnet_glosses.txt.gz
    train examples/seq2seq/gloss2word.yaml "$@" ;;
  *)
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
    exit 2 ;;
esac
