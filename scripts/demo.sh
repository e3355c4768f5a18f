#!/usr/bin/env bash
# The main job on bundled data (examples/spam): train a small BERT from random initialisation
# to classify the SpamAssassin corpus, on 2 threads, then evaluate and predict. Prints the
# validation and test metrics; the model, checkpoints, logs and predictions land in out/spam.
set -euo pipefail
cd "$(dirname "$0")/.."
STRATA=${STRATA:-build/strata}
"$STRATA" train examples/spam/train.yaml "$@"
