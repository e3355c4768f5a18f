#!/usr/bin/env bash
# A real Slurm cluster on this one machine, for tests and demos: munged, slurmctld and N
# slurmd daemons (nodes n1..nN, all on 127.0.0.1, one slurmd per node as a multi-host
# cluster has), from Debian's slurm-wlm and munge packages. Everything lives in a temporary
# state directory; the daemons are stopped and the directory removed when COMMAND ends.
#
#   scripts/slurm_cluster.sh [--nodes N] [--cpus C] [--gpus G] [--memory MB] [--keep] -- COMMAND [ARGS...]
#     --nodes N    slurmd daemons (default 2)
#     --cpus C     CPUs each node offers (default 1; more than the machine has is allowed)
#     --gpus G     GPUs each node declares (Gres=gpu:G, up to 5, without real devices; default 0)
#     --memory MB  RealMemory of each node (default 4000)
#     --keep       leave the state directory (logs) in place at the end and print its path
#   COMMAND runs with SLURM_CONF exported (sbatch, srun, squeue, scontrol, ... reach the
#   cluster) and STRATA_SLURM_DIR set to the state directory. The exit status is COMMAND's.
#   When Slurm cannot be started here (packages missing, a daemon that does not come up) the
#   script prints "SKIP: <why>" and exits 77, which CTest reports as a skipped test.
#
# Why each setting (we run as root in a container, without systemd or a cgroup hierarchy of
# our own):
#   ProctrackType=proctrack/linuxproc, TaskPlugin=task/none   no cgroup plugins
#   AuthType=auth/munge with AuthInfo=socket=...              a private munged, not the system one
#   AccountingStorageType=accounting_storage/none             slurmdbd needs a MySQL server: too
#                                                             heavy here, so sacct has no data;
#   JobCompType=jobcomp/filetxt                               finished jobs are in jobcomp.log and
#                                                             `scontrol show job` (MinJobAge 300 s)
#   Port=[a-b] per node, one slurm.conf copy per node         several slurmd on one host; each
#                                                             node's mpi.conf gives srun --mpi=pmix
#                                                             its own PMIx directory (they collide
#                                                             in /tmp otherwise)
set -euo pipefail

NODES=2
CPUS=1
GPUS=0
MEMORY=4000
KEEP=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --nodes) NODES=$2; shift 2 ;;
    --cpus) CPUS=$2; shift 2 ;;
    --gpus) GPUS=$2; shift 2 ;;
    --memory) MEMORY=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "slurm_cluster.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ $# -gt 0 ]] || { echo "slurm_cluster.sh: no COMMAND after --" >&2; exit 2; }
[[ $NODES =~ ^[0-9]+$ && $NODES -ge 1 && $NODES -le 16 ]] || { echo "--nodes must be 1..16" >&2; exit 2; }
FAKE_GPU_FILES=(/dev/null /dev/zero /dev/full /dev/random /dev/urandom)
[[ $GPUS =~ ^[0-9]+$ && $GPUS -le ${#FAKE_GPU_FILES[@]} ]] || { echo "--gpus must be 0..${#FAKE_GPU_FILES[@]}" >&2; exit 2; }

skip() { echo "SKIP: $*"; exit 77; }
for bin in munged slurmctld slurmd sbatch srun squeue scontrol sinfo python3; do
  command -v "$bin" > /dev/null || skip "$bin is not installed (Debian packages slurm-wlm and munge: scripts/install_deps.sh)"
done
[[ $(id -u) == 0 ]] || skip "the one-machine cluster runs its daemons as root (SlurmUser=root); run as root"

DIR=$(mktemp -d /tmp/strata_slurm.XXXXXX)
PIDS=()
# slurmstepd processes (one per job step, detached from slurmd) of this cluster: those whose
# working directory is inside its state directory.
our_stepds() {
  find /proc -mindepth 2 -maxdepth 2 -name cwd -lname "$DIR/*" 2> /dev/null | cut -d/ -f3
}
stop_cluster() {
  set +e  # stop everything, whatever fails on the way
  local pid
  local jobs=""
  [[ -n ${SLURM_CONF:-} ]] && jobs=$(squeue -h -o %i 2> /dev/null || true)
  [[ -n $jobs ]] && scancel --full $jobs 2> /dev/null
  for _ in $(seq 20); do [[ -z $(our_stepds) ]] && break; sleep 0.2; done
  PIDS+=($(our_stepds))
  for pid in "${PIDS[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2> /dev/null || true
  done
  if [[ $KEEP == 1 ]]; then echo "slurm_cluster.sh: state and logs kept in $DIR"; else rm -rf "$DIR"; fi
}
trap stop_cluster EXIT
trap 'exit 130' INT TERM

# Free TCP ports: slurmctld, then one per slurmd.
read -r -a PORTS <<< "$(python3 - "$((NODES + 1))" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
)"
HOST=$(hostname)

dd if=/dev/urandom of="$DIR/munge.key" bs=1024 count=1 status=none
chmod 400 "$DIR/munge.key"
munged --force --socket="$DIR/munge.sock" --key-file="$DIR/munge.key" --pid-file="$DIR/munged.pid" \
  --log-file="$DIR/munged.log" --seed-file="$DIR/munged.seed" || skip "munged did not start: $(tail -n 3 "$DIR/munged.log" 2> /dev/null)"
PIDS+=("$(cat "$DIR/munged.pid")")

node_lines=""
for ((i = 1; i <= NODES; i++)); do
  node_lines+="NodeName=n$i NodeHostname=$HOST NodeAddr=127.0.0.1 Port=${PORTS[$i]} CPUs=$CPUS RealMemory=$MEMORY"
  ((GPUS == 0)) || node_lines+=" Gres=gpu:$GPUS"
  node_lines+=" State=UNKNOWN"$'\n'
done
mkdir -p "$DIR/ctld"
cat > "$DIR/slurm.conf" <<EOF
ClusterName=strata
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=${PORTS[0]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$DIR/munge.sock
CredType=cred/munge
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/%n/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/%n/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/%n/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/jobcomp.log
SchedulerType=sched/builtin
# A requeued job's BeginTime passing is no scheduling event, and the main loop tests pending
# jobs every 60 s by default: a requeued job could wait a minute before it starts again.
SchedulerParameters=sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
KillWait=30
MinJobAge=300
DebugFlags=NO_CONF_HASH
$( ((GPUS == 0)) || echo "GresTypes=gpu")
$node_lines
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$DIR/slurm.conf
slurmctld -f "$SLURM_CONF" -i || skip "slurmctld did not start: $(tail -n 3 "$DIR/slurmctld.log" 2> /dev/null)"
for _ in $(seq 50); do [[ -s $DIR/slurmctld.pid ]] && break; sleep 0.1; done
PIDS+=("$(cat "$DIR/slurmctld.pid")")
for ((i = 1; i <= NODES; i++)); do
  mkdir -p "$DIR/n$i/spool" "$DIR/n$i/pmix"
  cp "$SLURM_CONF" "$DIR/n$i/slurm.conf"
  # Declared GPUs on a machine that may have none: Slurm 22.05 counts a GPU only with a device
  # file, so each stands on a character device every Linux has (slurmd reads gres.conf beside
  # its slurm.conf). Jobs that ask for GPUs are scheduled and get SLURM_GPUS_* and
  # CUDA_VISIBLE_DEVICES as on a GPU cluster.
  for ((g = 0; g < GPUS; g++)); do echo "Name=gpu File=${FAKE_GPU_FILES[$g]}"; done > "$DIR/n$i/gres.conf"
  echo "PMIxCliTmpDirBase=$DIR/n$i/pmix" > "$DIR/n$i/mpi.conf"
  slurmd -f "$DIR/n$i/slurm.conf" -N "n$i" || skip "slurmd for node n$i did not start: $(tail -n 3 "$DIR/n$i/slurmd.log" 2> /dev/null)"
  for _ in $(seq 50); do [[ -s $DIR/n$i/slurmd.pid ]] && break; sleep 0.1; done
  PIDS+=("$(cat "$DIR/n$i/slurmd.pid")")
done

for _ in $(seq 100); do
  idle=$(sinfo -h -N -o '%t' 2> /dev/null | grep -c '^idle' || true)
  [[ $idle == "$NODES" ]] && break
  sleep 0.2
done
[[ ${idle:-0} == "$NODES" ]] || skip "only ${idle:-0} of $NODES nodes became idle within 20 s: $(sinfo -N 2>&1 | tr '\n' ' ')"
echo "slurm_cluster.sh: cluster 'strata' up: $NODES node(s) n1..n$NODES x $CPUS CPU(s)$( ((GPUS == 0)) || echo " and $GPUS declared GPU(s)"), state in $DIR"

export STRATA_SLURM_DIR=$DIR
set +e
"$@"
status=$?
set -e
exit $status
