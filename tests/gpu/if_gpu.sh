#!/usr/bin/env bash
# Runs an mpirun command where an NVIDIA GPU is present (nvidia-smi lists one) and mpirun is
# installed; else exits 77 (skipped), as a rank's own skip would turn into mpirun's failure.
# (The lent GPU machine has no OpenMPI: scripts/pack_gpu_bundle.sh carries its libraries, not
# its launcher.)
#   if_gpu.sh MPIRUN [ARGS...]
nvidia-smi -L > /dev/null 2>&1 || { echo "skipped: no NVIDIA GPU (nvidia-smi -L)"; exit 77; }
[[ -x $1 ]] || command -v "$1" > /dev/null || { echo "skipped: no $1 on this machine"; exit 77; }
exec "$@"
