#!/usr/bin/env bash
# Runs the command where an NVIDIA GPU is present (nvidia-smi lists one); else exits 77
# (skipped), for commands such as mpirun that would turn each rank's own skip into a failure.
#   if_gpu.sh COMMAND [ARGS...]
nvidia-smi -L > /dev/null 2>&1 || { echo "skipped: no NVIDIA GPU (nvidia-smi -L)"; exit 77; }
exec "$@"
