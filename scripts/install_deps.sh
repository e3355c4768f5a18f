#!/usr/bin/env bash
# Installs every Debian 12 package strata needs to build, test and benchmark.
# Run as root (or with sudo available). Safe to re-run.
set -euo pipefail
PKGS=(
  # toolchain
  g++ cmake ninja-build pkg-config git
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # matrix products: OpenBLAS (OpenMP build) is the one strata links; BLIS and oneDNN
  # are measured against it in bench/gemm_libs (see docs/gemm.md)
  libopenblas-dev libopenblas0-pthread libopenblas0-openmp libblis-dev libblis4-openmp libdnnl-dev libomp-dev
  # JSON (config.json, safetensors headers, batches)
  nlohmann-json3-dev
  # later issues: MPI, Unicode, YAML
  libopenmpi-dev openmpi-bin libutf8proc-dev libyaml-cpp-dev
  # gzip-compressed datasets
  zlib1g-dev
  # training jobs on Slurm (strata job, backend: slurm): the daemons, the client commands and
  # munge, for scripts/slurm_cluster.sh's one-machine cluster; ip netns for netns_cluster.sh
  slurm-wlm munge iproute2
  # PyTorch peer for bench/torch_peer.sh and the HF oracle (fixtures)
  python3-torch python3-numpy python3-yaml python3-regex python3-requests python3-filelock
  python3-tqdm python3-packaging
  # peak-RSS measurement in benchmarks
  time
)
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
echo "install_deps: all ${#PKGS[@]} packages present"
