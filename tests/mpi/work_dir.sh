# The MPI test scripts' scratch directory and environment (sourced, not run): a fresh $WORK,
# removed at exit unless KEEP is set (then its path, printed first, holds every run's files),
# mpirun allowed as root (CI containers), one OpenMP thread per rank.
WORK=$(mktemp -d)
trap '[[ -n "${KEEP:-}" ]] || rm -rf "$WORK"' EXIT
echo "work dir: $WORK"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
