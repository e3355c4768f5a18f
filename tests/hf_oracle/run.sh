#!/usr/bin/env bash
# Runs a check of tests/hf_oracle/ under HF's own code: the hf-oracle environment
# (../shared/tools/hf-oracle: Debian's python3 and torch, transformers v4.36.2 and
# huggingface_hub v0.19.4 exported by its setup_hf_env.sh into HF_DEST, default /tmp/hf).
# Where that environment is not set up, says so and exits 77, which CTest reports as skipped.
#   run.sh SCRIPT.py STRATA_BINARY SOURCE_DIR
set -euo pipefail
SCRIPT=${1:?usage: run.sh SCRIPT.py STRATA_BINARY SOURCE_DIR}
STRATA=${2:?}
SRC=${3:?}
ORACLE=${HF_ORACLE:-$SRC/../shared/tools/hf-oracle}
DEST=${HF_DEST:-/tmp/hf}
PP="$ORACLE/shims:$DEST/transformers-4.36.2/src:$DEST/huggingface_hub-0.19.4/src"
if [[ ! -f "$ORACLE/shims/test_safetensors_shim.py" || ! -f "$DEST/transformers-4.36.2/src/transformers/__init__.py" ]] ||
   ! PYTHONPATH=$PP /usr/bin/python3 -c "import torch, yaml, transformers, huggingface_hub" 2>/dev/null; then
  echo "skipped: the HF oracle environment is not set up (see $ORACLE/README.md; HF_DEST=$DEST)"
  exit 77
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# Offline: TrainingSummary would otherwise ask the Hub for the base model's license.
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONPATH=$PP /usr/bin/python3 "$SCRIPT" "$STRATA" "$SRC" "$WORK"
