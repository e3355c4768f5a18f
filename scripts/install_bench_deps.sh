#!/usr/bin/env bash
# Installs what the benchmarks and the fixture generators need on top of install_deps.sh:
# the PyTorch peer (bench/torch_peer.sh, bench/compare_torch.sh, tests/fixtures/make_*.sh and
# the HF oracle), the HF Trainer peer (bench/hf_trainer_peer.sh), the GEMM libraries compared
# in bench/gemm_libs (docs/gemm.md), and GNU time for peak-RSS figures. Building, running and
# testing strata need none of it.
# Run as root (or with sudo available). Safe to re-run. --print lists the packages only.
set -euo pipefail
PKGS=(
  # PyTorch peer and the HF oracle
  python3-torch python3-numpy python3-yaml python3-regex python3-requests python3-filelock
  python3-tqdm python3-packaging
  # the HF Trainer peer (bench/hf_trainer_peer.sh, bench/spam_vs_hf_trainer.sh): accelerate imports
  # psutil, and hf_trainer_spam.py times from the process's start with it
  python3-psutil
  # GEMM libraries measured against the one strata links
  libblis-dev libblis4-openmp libopenblas0-openmp libomp-dev
  # peak-RSS measurement
  time
)
source "$(dirname "$0")/apt_packages.sh"
apt_packages "$@"
