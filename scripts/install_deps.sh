#!/usr/bin/env bash
# Installs the Debian 12 packages strata needs to build, run and test, and no more.
# Benchmarks and fixture generators need more (PyTorch, BLIS, ...): scripts/install_bench_deps.sh.
# Run as root (or with sudo available). Safe to re-run. --print lists the packages only.
set -euo pipefail
PKGS=(
  # toolchain; git names the commit in `strata --version`
  g++ cmake ninja-build pkg-config git
  # compiles once per machine: a clone elsewhere (CI's) reuses the objects (CMakeLists.txt)
  ccache
  # matrix products: oneDNN's sgemm, OpenBLAS's (pthread build) dgemm (docs/gemm.md)
  libdnnl-dev libopenblas-dev libopenblas0-pthread
  # JSON, YAML, Unicode, gzip-compressed datasets
  nlohmann-json3-dev libyaml-cpp-dev libutf8proc-dev zlib1g-dev
  # processes and collectives
  libopenmpi-dev openmpi-bin
  # the command line; TensorBoard event files (protocol buffers)
  libcli11-dev libprotobuf-dev protobuf-compiler
  # tests: GoogleTest, and python3 (standard library only) in the multi-process test scripts
  libgtest-dev python3
  # the Python package (python/strata, docs/python.md): headers, pybind11 and a venv for its
  # tests (Debian's numpy and pytest, and `datasets` from PyPI: scripts/install_python_env.sh)
  python3-dev python3-venv python3-pip pybind11-dev python3-numpy python3-pytest python3-yaml
  # tests: Oniguruma, HF tokenizers' regex engine, as the oracle for strata's (RegexOracle)
  libonig-dev
  # fuzzing (scripts/fuzz_smoke.sh): clang with libFuzzer's runtime and the sanitizers
  clang-14 libclang-rt-14-dev
  # training jobs on Slurm (strata job, backend: slurm): the daemons, the client commands and
  # munge, for scripts/slurm_cluster.sh's one-machine cluster (and its tests); ip netns for
  # netns_cluster.sh
  slurm-wlm munge iproute2
  # strata report: charts drawn by gnuplot's svg terminal (docs/reports.md says why gnuplot);
  # the report's test renders the page in headless Chromium
  gnuplot-nox chromium
)
source "$(dirname "$0")/apt_packages.sh"
apt_packages "$@"
if [[ ${1:-} != --print ]]; then
  "$(dirname "$0")/install_python_env.sh"
fi
