#!/usr/bin/env bash
# The hostfile backend on separate hosts: scripts/netns_cluster.sh makes 2 network-namespace
# "hosts" joined over TCP; inside the first, `strata job run` starts a 2-instance job with
# mpirun over a hostfile naming both. The job is interrupted once, after step 250 (the ranks
# pause there until the interruption reaches them: no race with the machine's speed); its
# final parameters must equal those of the same 2-rank training run by mpirun on this host
# (shared memory). Then a script entry point on the same hosts: each rank's SM_HOSTS and
# SM_CURRENT_HOST name the hostfile's hosts.
#   hostfile_netns.sh STRATA_BINARY SOURCE_DIR
# Exits 77 (skipped) where network namespaces cannot be made (not root, no ip netns).
set -euo pipefail
STRATA=${1:?usage: hostfile_netns.sh STRATA_BINARY SOURCE_DIR}
SRC=${2:?}
source "$SRC/tests/jobs/tiny_training.sh"
[[ $(id -u) == 0 ]] || { echo "SKIP: network namespaces need root"; exit 77; }
probe=strata_probe_$$
ip netns add "$probe" 2> /dev/null || { echo "SKIP: cannot create a network namespace (ip netns add)"; exit 77; }
ip netns del "$probe"
WORK=$(mktemp -d)
trap '[[ -n "${KEEP:-}" ]] || rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "work dir: $WORK"
tiny_training "$WORK" 600 4

mpirun --oversubscribe -np 2 "$STRATA" train "$WORK/train.yaml" --set output_dir="$WORK/reference" \
  --set num_threads=1 > "$WORK/reference.log" 2>&1 || { tail -20 "$WORK/reference.log"; fail "the reference run failed"; }

cat > "$WORK/job.yaml" <<YAML
backend: hostfile
hostfile: HOSTFILE
instance_type: local.c1
instance_count: 2
training_config: $WORK/train.yaml
output_path: $WORK/jobs
use_spot_instances: true
simulate_interruptions: [{at_step: 250}]
simulate_capacity_wait: 0.5
termination_grace_period: 30
YAML
# A script entry point on the same hosts: each rank is told the hostfile's hosts and its own.
cat > "$WORK/hosts.py" <<'PY'
import json, os
with open(os.path.join(os.environ["SM_OUTPUT_DATA_DIR"], "rank-" + os.environ["OMPI_COMM_WORLD_RANK"] + ".json"), "w") as f:
    json.dump({"hosts": json.loads(os.environ["SM_HOSTS"]), "host": os.environ["SM_CURRENT_HOST"]}, f)
PY
sed -e "s#^training_config: .*#entry_point: $WORK/hosts.py#" -e '/^use_spot_instances\|^simulate_/d' "$WORK/job.yaml" \
  > "$WORK/script.yaml"
# A prefix and subnet of our own: other runs of netns_cluster.sh may be up at the same time.
"$SRC/scripts/netns_cluster.sh" -n 2 --prefix "sj$$" --subnet "10.231.$(($$ % 200 + 20))" --run \
  "sed \"s#HOSTFILE#\$STRATA_NETNS_HOSTFILE#\" '$WORK/job.yaml' > '$WORK/job.run.yaml' &&
   sed \"s#HOSTFILE#\$STRATA_NETNS_HOSTFILE#\" '$WORK/script.yaml' > '$WORK/script.run.yaml' &&
   cd '$WORK' && '$STRATA' job run '$WORK/job.run.yaml' --job-name netns &&
   '$STRATA' job run '$WORK/script.run.yaml' --job-name netns-script" > "$WORK/job.log" 2>&1 ||
  { tail -30 "$WORK/job.log"; fail "the hostfile jobs failed"; }
job=$WORK/jobs/netns
[[ $(job_field "$job" "s['status']") == Completed ]] || fail "status $(job_field "$job" "s['status']")"
[[ $(job_field "$job" "len(s['attempts'])") == 2 ]] || fail "expected 2 attempts (one interruption)"
grep -q "stopped after step 250 of 600" "$job/logs/attempt-1/rank-0.log" || fail "attempt 1 did not stop after step 250"
grep -q "resumed from .*checkpoint-250" "$job/logs/attempt-2/rank-0.log" || fail "attempt 2 did not resume from step 250"
grep -q "mpirun over .*: 10\.231\." "$WORK/job.log" || fail "the plan does not name the namespace hosts"
# Each rank ran on a host of its own: rank 0's banner says it is alone on its node.
grep -q "rank 0 of 2 (local rank 0 of 1 on this node" "$job/logs/attempt-2/rank-0.log" ||
  fail "the ranks did not run on hosts of their own"
cmp "$WORK/reference/model.safetensors" "$job/model/model.safetensors" ||
  fail "the hostfile job's final parameters differ from the 2-rank run's"
echo "hostfile job over 2 namespace hosts: interrupted once, final parameters identical to mpirun's on one host"
python3 - "$WORK/jobs/netns-script" <<'PY'
import json, sys
hosts = json.load(open(sys.argv[1] + "/plan.json"))["hosts"]  # the hostfile's first two
assert len(set(hosts)) == 2 and all(h.startswith("10.231.") for h in hosts), hosts
ranks = [json.load(open(f"{sys.argv[1]}/output/data/rank-{r}.json")) for r in (0, 1)]
assert all(r["hosts"] == hosts for r in ranks), (ranks, hosts)
assert [r["host"] for r in ranks] == hosts, (ranks, hosts)
PY
echo "script entry point over the same hosts: SM_HOSTS is the hostfile's, SM_CURRENT_HOST each rank's"
echo PASS
