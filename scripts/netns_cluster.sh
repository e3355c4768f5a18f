#!/usr/bin/env bash
# A small multi-host cluster on one machine: N network namespaces ("hosts") h1..hN, each with
# its own loopback, its own interface eth0 with an address in a private subnet (default
# 10.231.7.0/24) and its own hostname (a UTS namespace per process tree), joined by a
# bridge that lives in a further namespace (<prefix>sw). Nothing is added to the root
# namespace's network: no address, no route, no link.
#
# It then runs a data-parallel `strata train` over them with OpenMPI over TCP, one rank per
# host. mpirun itself runs inside h1; it starts the orted on every other host through a
# launch agent (`--mca plm_rsh_agent AGENT`, called as `AGENT HOST command...` like ssh)
# that runs the command under `ip netns exec hK`. TCP only: `--mca btl tcp,self` with
# btl_tcp_if_include / oob_tcp_if_include set to the cluster subnet.
#
#   scripts/netns_cluster.sh [options] [-- --set key=value ...]
#     -n N              hosts (default 2), one rank each
#     --rate LIST       comma-separated link rates to run at, e.g. unlimited,1gbit,100mbit,10mbit
#                       (tc tbf on every host's egress); default: one run, unlimited
#     --steps LIST      max_steps per rate (one value for all, or one per rate; default 20)
#     --config YAML     job (default bench/dp/spam_short.yaml)
#     --model DIR       model_name_or_path (default bench/dp/bert-tiny)
#     --threads T       num_threads per rank (default 1)
#     --subnet A.B.C    /24 to use, must be private 10.x (default 10.231.7)
#     --prefix P        namespace names P1..PN and Psw (default h)
#     --exec "CMD"      instead of strata, run CMD on every rank through the same mpirun
#     --run "CMD"       run CMD once, inside h1, with the cluster's Open MPI settings exported
#                       (OMPI_MCA_* as below) and STRATA_NETNS_HOSTFILE naming a hostfile of the
#                       hosts ("<address> slots=1" lines): a hostfile job (strata job run) uses it;
#                       the links run at the first --rate
#     --keep            leave the namespaces up at the end (delete them with --down)
#     --down            delete the namespaces left by --keep and exit
#   Anything after `--` goes to `strata train` (e.g. --set per_device_train_batch_size=16).
#
# Needs root (ip netns, tc), OpenMPI's mpirun/orted, unshare (util-linux), build/strata.
# Prints, per run, the steady-state time per step (from step 1's log line to the last step's,
# timestamped as they arrive) and the global throughput; with several rates, a table.
set -euo pipefail

N=2
RATES=unlimited
STEPS=20
CONFIG=bench/dp/spam_short.yaml
MODEL=bench/dp/bert-tiny
THREADS=1
SUBNET=10.231.7
PREFIX=h
EXEC=""
RUN=""
KEEP=0
DOWN=0
EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -n) N=$2; shift 2 ;;
    --rate) RATES=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --config) CONFIG=$2; shift 2 ;;
    --model) MODEL=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --subnet) SUBNET=$2; shift 2 ;;
    --prefix) PREFIX=$2; shift 2 ;;
    --exec) EXEC=$2; shift 2 ;;
    --run) RUN=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --down) DOWN=1; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    *) echo "netns_cluster.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

[[ $SUBNET =~ ^10\.([0-9]{1,3})\.([0-9]{1,3})$ ]] || { echo "--subnet must be 10.X.Y (a private /24)" >&2; exit 2; }
[[ $N =~ ^[0-9]+$ && $N -ge 2 && $N -le 200 ]] || { echo "-n must be 2..200" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "netns_cluster.sh: needs root (ip netns, tc)" >&2; exit 1; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SW=${PREFIX}sw
hosts() { local i; for ((i = 1; i <= N; i++)); do echo "$PREFIX$i"; done; }
ip_of() { echo "$SUBNET.$1"; }

teardown() {
  local ns
  for ns in $(hosts) "$SW"; do
    ip netns del "$ns" 2>/dev/null || true  # deleting a namespace deletes its veth ends and bridge
  done
  [[ -n ${WORK:-} ]] && rm -rf "$WORK"
  return 0
}

if [[ $DOWN == 1 ]]; then teardown; echo "deleted namespaces $(hosts | tr '\n' ' ')$SW"; exit 0; fi

for ns in $(hosts) "$SW"; do
  if ip netns list | awk '{print $1}' | grep -qx "$ns"; then
    echo "netns_cluster.sh: namespace $ns already exists (another run, or --keep); remove it with --down or pick --prefix" >&2
    exit 1
  fi
done

WORK=$(mktemp -d /tmp/strata_netns.XXXXXX)
if [[ $KEEP == 0 ]]; then trap teardown EXIT; else trap 'rm -rf "$WORK"' EXIT; fi
trap 'exit 130' INT TERM

# --- the cluster -----------------------------------------------------------------------------
ip netns add "$SW"
ip -n "$SW" link set lo up
ip -n "$SW" link add br0 type bridge
ip -n "$SW" link set br0 up
for ((i = 1; i <= N; i++)); do
  ns=$PREFIX$i
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  # Created inside the host namespace, the peer moved straight into the switch namespace:
  # neither end ever exists in the root namespace.
  ip -n "$ns" link add eth0 type veth peer name p$i netns "$SW"
  ip -n "$ns" addr add "$(ip_of "$i")/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$SW" link set p$i master br0
  ip -n "$SW" link set p$i up
done

set_rate() {  # tc tbf on each host's egress; every packet leaves some host, so each direction is limited
  local rate=$1 i ns bytes burst
  for ((i = 1; i <= N; i++)); do
    ns=$PREFIX$i
    ip netns exec "$ns" tc qdisc del dev eth0 root 2>/dev/null || true
    [[ $rate == unlimited ]] && continue
    # burst: 5 ms at the rate (at least 16 KiB), queue up to 100 ms
    bytes=$(python3 -c "import re,sys;m=re.fullmatch(r'([0-9.]+)([kmg]?)bit','$rate'.lower());print(int(float(m[1])*{'':1,'k':1e3,'m':1e6,'g':1e9}[m[2]]/8))")
    burst=$(( bytes / 200 )); (( burst < 16384 )) && burst=16384
    ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst "$burst" latency 100ms
  done
}

# --- the launch agent ------------------------------------------------------------------------
# mpirun calls it like ssh: AGENT [ssh options] HOST remote command words...; the words are
# joined and run by a shell, as sshd would, inside host HOST's namespaces.
AGENT=$WORK/netns_agent.sh
cat > "$AGENT" <<EOF
#!/bin/sh
while [ \$# -gt 0 ]; do case "\$1" in -*) shift ;; *) break ;; esac; done
host=\$1; shift
case "\$host" in
  $SUBNET.*) ns=$PREFIX\${host##*.} ;;
  *) echo "netns_agent: \$host is not a cluster address ($SUBNET.0/24)" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" unshare --uts sh -c 'hostname "\$0"; eval "\$1"' "\$ns" "\$*"
EOF
chmod +x "$AGENT"

HOSTLIST=$(for ((i = 1; i <= N; i++)); do printf '%s:1,' "$(ip_of "$i")"; done); HOSTLIST=${HOSTLIST%,}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --allow-run-as-root -np "$N" --host "$HOSTLIST" --bind-to none
        --mca plm_rsh_agent "$AGENT"
        --mca btl tcp,self --mca btl_tcp_if_include "$SUBNET.0/24"
        --mca oob_tcp_if_include "$SUBNET.0/24"
        --mca pml ob1 --mca osc '^ucx' --mca btl_vader_single_copy_mechanism none
        -x OMP_NUM_THREADS="$THREADS" -x PATH)
[[ -n ${LD_LIBRARY_PATH:-} ]] && MPIRUN+=(-x LD_LIBRARY_PATH)
tx_bytes() { ip netns exec "${PREFIX}1" cat /sys/class/net/eth0/statistics/tx_bytes; }

in_h1() {  # run a command inside host 1: its network, and hostname h1
  ip netns exec "${PREFIX}1" unshare --uts sh -c 'hostname "$0"; exec "$@"' "${PREFIX}1" "$@"
}

echo "cluster: $N hosts ($(hosts | tr '\n' ' ')) on $SUBNET.0/24, bridge br0 in namespace $SW"
for ((i = 1; i <= N; i++)); do
  printf '  %s  %s\n' "$PREFIX$i" "$(ip -n "$PREFIX$i" -4 -o addr show | awk '{printf "%s %s  ", $2, $4}')"
done

if [[ -n $RUN ]]; then
  # The same settings as the mpirun line above, as environment variables: mpirun reads
  # OMPI_MCA_<name>, and strata launch forwards them to the ranks.
  export OMPI_MCA_plm_rsh_agent=$AGENT OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=$SUBNET.0/24 \
    OMPI_MCA_oob_tcp_if_include=$SUBNET.0/24 OMPI_MCA_pml=ob1 OMPI_MCA_osc=^ucx \
    OMPI_MCA_btl_vader_single_copy_mechanism=none
  export STRATA_NETNS_HOSTFILE=$WORK/hostfile
  for ((i = 1; i <= N; i++)); do echo "$(ip_of "$i") slots=1"; done > "$STRATA_NETNS_HOSTFILE"
  set_rate "${RATES%%,*}"  # the first --rate (strata study: a netns:RATE cell)
  set +e
  in_h1 sh -c "$RUN"
  status=$?
  set -e
  exit $status
fi

if [[ -n $EXEC ]]; then
  set_rate "${RATES%%,*}"
  tx0=$(tx_bytes)
  in_h1 "${MPIRUN[@]}" sh -c "$EXEC"
  echo "h1 eth0 sent $(( ($(tx_bytes) - tx0) / 1000000 )) MB"
  [[ $KEEP == 1 ]] && echo "namespaces kept: scripts/netns_cluster.sh --down -n $N --prefix $PREFIX"
  exit 0
fi

[[ -x build/strata ]] || { echo "netns_cluster.sh: build/strata is missing (cd build && cmake .. && ninja strata)" >&2; exit 1; }
IFS=, read -r -a RATE_LIST <<< "$RATES"
IFS=, read -r -a STEP_LIST <<< "$STEPS"

# Timestamps every output line as it arrives at mpirun (rank 0's log lines), then takes the
# steady state from step 1's line to the last step's: step 1 (start-up, first touch of the
# weights, first connection set-up) is left out.
measure() {  # LOGFILE -> "steps ms_per_step"
  awk '/^[0-9.]+ \{.*"grad_norm":.*"step":/ { if (match($0, /"step":[0-9]+/)) { s = substr($0, RSTART + 7, RLENGTH - 7) + 0;
         t[s] = $1; if (first == "" || s < first) first = s; if (s > last) last = s } }
       END { if (last > first) printf "%d %.1f\n", last - first, 1000 * (t[last] - t[first]) / (last - first);
             else print "0 nan" }' "$1"
}

# The global batch of a step: per-device batch x accumulation x the data-parallel ranks, which
# are the ranks over pipeline_parallel_degree (partitions) x tensor_parallel_degree: the ranks of
# one pipeline or tensor group work on the same samples.
option() {  # NAME DEFAULT -> the config's value, a later --set overriding it
  local v
  v=$(awk -F': *' -v k="$1" '$1 == k {print $2}' "$CONFIG" | tail -n 1)
  for kv in "${EXTRA[@]}"; do [[ $kv == "$1"=* ]] && v=${kv#*=}; done
  echo "${v:-$2}"
}
BATCH=$(option per_device_train_batch_size 8)
PP=$(option pipeline_parallel_degree "$(option partitions 1)")
TP=$(option tensor_parallel_degree 1)
ACCUM=$(option gradient_accumulation_steps 1)
DP=$(( N / (PP * TP) ))
TABLE=()
for idx in "${!RATE_LIST[@]}"; do
  rate=${RATE_LIST[$idx]}
  steps=${STEP_LIST[$idx]:-${STEP_LIST[-1]}}
  set_rate "$rate"
  out=out/netns_cluster/$rate
  log=$WORK/run_$rate.log
  echo
  echo "== link $rate: $N ranks x $THREADS thread(s), $MODEL, batch $BATCH per rank, $steps steps"
  echo "   ${MPIRUN[*]} build/strata train $CONFIG ..."
  t0=$EPOCHREALTIME
  tx0=$(tx_bytes)
  set +e
  in_h1 "${MPIRUN[@]}" "$ROOT/build/strata" train "$ROOT/$CONFIG" \
      --set model_name_or_path="$MODEL" --set max_steps="$steps" --set num_threads="$THREADS" \
      --set output_dir="$out" "${EXTRA[@]}" 2>&1 |
    while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done > "$log"
  rc=${PIPESTATUS[0]}
  set -e
  wall=$(python3 -c "print(f'{$EPOCHREALTIME - $t0:.1f}')")
  sent=$(( ($(tx_bytes) - tx0) / 1000000 ))
  if [[ $rc != 0 ]]; then
    echo "   FAILED (rc $rc); last lines:"; tail -n 15 "$log" | cut -d' ' -f2- | sed 's/^/   | /'
    TABLE+=("$(printf '%-10s %6s %10s %12s %12s %10s %7s' "$rate" "$steps" "failed" "-" "-" "$sent" "$wall")")
    continue
  fi
  grep -E '"loss"|train_runtime|Processes' "$log" | cut -d' ' -f2- | tail -n 4 | sed 's/^/   | /'
  read -r nsteps ms <<< "$(measure "$log")"
  hidden=$(python3 -c "import json;print(json.load(open('$out/train_results.json')).get('ddp_comm_hidden_fraction','-'))" 2>/dev/null || echo -)
  sps=$(python3 -c "print(f'{$BATCH * $ACCUM * $DP * 1000 / $ms:.1f}')")
  echo "   steady state: $ms ms/step over $nsteps steps -> $sps samples/s (global), ddp_comm_hidden_fraction $hidden, h1 eth0 sent $sent MB, wall ${wall}s"
  TABLE+=("$(printf '%-10s %6s %10s %12s %12s %10s %7s' "$rate" "$steps" "$ms" "$sps" "$hidden" "$sent" "$wall")")
done

echo
echo "machine: $(lscpu | awk -F': *' '/^Model name/ {print $2; exit}'), $(nproc) cores; $N namespaces, one rank each, num_threads $THREADS"
printf '%-10s %6s %10s %12s %12s %10s %7s\n' link steps ms/step samples/s comm_hidden h1_sent_MB wall_s
printf '%s\n' "${TABLE[@]}"
[[ $KEEP == 1 ]] && echo "namespaces kept: scripts/netns_cluster.sh --down -n $N --prefix $PREFIX"
exit 0
