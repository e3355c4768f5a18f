#!/usr/bin/env bash
# The main job on bundled data: inspect a Hugging Face model directory, then run one
# training step (forward, backward, AdamW) on a bundled batch and write loss, logits, every
# gradient and the updated weights. The model and batch are the HF-made fixtures in
# tests/fixtures (a random-init BertForSequenceClassification saved by transformers 4.36.2).
set -euo pipefail
cd "$(dirname "$0")/.."
STRATA=${STRATA:-build/strata}
MODEL=tests/fixtures/bert-seq-cls
"$STRATA" info "$MODEL" --batch 3 --seq 12
"$STRATA" step --model "$MODEL" --batch "$MODEL.inputs.json" --out build/demo-step.safetensors \
    --optimizer adamw --lr 1e-3 --weight-decay 0.01 --threads 2
