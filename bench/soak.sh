#!/usr/bin/env bash
# Long-run soak (docs/reliability.md, "Soak"): trains a small BERT for MINUTES with evaluation
# and checkpointing (and a loader worker thread), samples the process every SECONDS, then stops
# it with SIGTERM (the graceful stop saves a checkpoint) and checks, after the first 10% of
# the run (warm-up):
#   - RSS is flat: least-squares slope under 1 MiB per 1000 steps;
#   - open file descriptors (/proc/PID/fd) and threads (/proc/PID/status) do not grow: the
#     median count of the last quarter of the samples is not above the first quarter's (a
#     sample can catch a file a save or a log append holds open for a moment);
#   - the step time does not drift: the median CPU time per step (user + system, from
#     /proc/PID/stat) of the last quarter is within 10% of the first quarter's. CPU time, not
#     wall time: on a shared machine the wall time per step follows the other processes' load
#     (the table gives it too).
# Prints one table and PASS or FAIL lines; exits non-zero on a FAIL.
#   bench/soak.sh STRATA_BINARY SOURCE_DIR [MINUTES=30] [SECONDS=5] [OUT_DIR]
set -euo pipefail
STRATA=${1:?usage: soak.sh STRATA_BINARY SOURCE_DIR [MINUTES] [SECONDS] [OUT_DIR]}
SRC=${2:?}
MINUTES=${3:-30}
EVERY=${4:-5}
WORK=${5:-$(mktemp -d)}
mkdir -p "$WORK"
source "$SRC/tests/jobs/tiny_training.sh"
echo "work dir: $WORK; $MINUTES minutes, a sample every $EVERY s; $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
tiny_training "$WORK" 100000000 16
cp "$WORK/train.csv" "$WORK/valid.csv"
sed -i 's/^save_steps: .*/save_steps: 500/; s/^logging_steps: .*/logging_steps: 50/' "$WORK/train.yaml"
cat >> "$WORK/train.yaml" << YAML
validation_file: $WORK/valid.csv
eval_strategy: steps
eval_steps: 500
dataloader_num_workers: 1
num_threads: 1
overwrite_output_dir: true
YAML

OMP_NUM_THREADS=1 "$STRATA" train "$WORK/train.yaml" > "$WORK/train.log" 2>&1 &
pid=$!
samples=$WORK/samples.tsv
echo -e "seconds\tstep\trss_kib\tfds\tthreads\tcpu_ticks" > "$samples"
t0=$(date +%s.%N)
end=$(($(date +%s) + MINUTES * 60))
while (($(date +%s) < end)) && kill -0 $pid 2> /dev/null; do
  sleep "$EVERY"
  step=$(tail -n 20 "$WORK/out/trainer_log.jsonl" 2> /dev/null | grep -o '"step":[0-9]*' | tail -1 | cut -d: -f2)
  rss=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status 2> /dev/null) || break
  threads=$(awk '/^Threads/ {print $2}' /proc/$pid/status 2> /dev/null) || break
  fds=$(ls /proc/$pid/fd 2> /dev/null | wc -l)
  # utime + stime: fields 14 and 15 of /proc/PID/stat, counted after the ")" that ends the name.
  ticks=$(sed 's/.*) //' /proc/$pid/stat 2> /dev/null | awk '{print $12 + $13}') || break
  now=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  echo -e "$now\t${step:-0}\t$rss\t$fds\t$threads\t$ticks" >> "$samples"
done
kill -TERM $pid 2> /dev/null || true
rc=0
wait $pid || rc=$?
# 75: stopped by the signal after saving a checkpoint (src/core/exit_status.h); 0: max_steps
# reached; anything else is a failure.
[[ $rc == 75 || $rc == 0 ]] || { tail -20 "$WORK/train.log"; echo "FAIL: the run ended with status $rc"; exit 1; }

python3 - "$samples" << 'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
s = [tuple(float(x) for x in r) for r in rows]
warm = s[len(s) // 10:]
steps = [r[1] for r in warm]
n = len(warm)
q = max(n // 4, 2)
first, last = warm[:q], warm[-q:]
def slope(xs, ys):
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0
rss_slope = slope(steps, [r[2] / 1024 for r in warm]) * 1000  # MiB per 1000 steps
TICK_MS = 1000 / float(__import__("os").sysconf("SC_CLK_TCK"))
def ms_per_step(part, col, scale):  # median over consecutive samples of d(col) / d(step)
    out = []
    for a, b in zip(part, part[1:]):
        if b[1] > a[1]:
            out.append((b[col] - a[col]) * scale / (b[1] - a[1]))
    return statistics.median(out) if out else float("nan")
ms_first, ms_last = ms_per_step(first, 0, 1000), ms_per_step(last, 0, 1000)
cpu_first, cpu_last = ms_per_step(first, 5, TICK_MS), ms_per_step(last, 5, TICK_MS)
fd_first, fd_last = statistics.median(r[3] for r in first), statistics.median(r[3] for r in last)
th_first, th_last = statistics.median(r[4] for r in first), statistics.median(r[4] for r in last)
print(f"{'samples after warm-up':32s} {n}")
print(f"{'steps':32s} {int(s[-1][1])} ({int(steps[0])} at the end of warm-up)")
print(f"{'RSS MiB first / last sample':32s} {warm[0][2] / 1024:.1f} / {warm[-1][2] / 1024:.1f} (min {min(r[2] for r in warm) / 1024:.1f}, max {max(r[2] for r in warm) / 1024:.1f})")
print(f"{'RSS slope MiB / 1000 steps':32s} {rss_slope:+.4f}")
print(f"{'open fds median, first / last qtr':32s} {fd_first:.0f} / {fd_last:.0f} (range {min(r[3] for r in warm):.0f}-{max(r[3] for r in warm):.0f})")
print(f"{'threads median, first / last qtr':32s} {th_first:.0f} / {th_last:.0f} (range {min(r[4] for r in warm):.0f}-{max(r[4] for r in warm):.0f})")
print(f"{'wall ms / step, first / last qtr':32s} {ms_first:.2f} / {ms_last:.2f} ({(ms_last / ms_first - 1) * 100:+.1f}%)")
print(f"{'CPU ms / step, first / last qtr':32s} {cpu_first:.2f} / {cpu_last:.2f} ({(cpu_last / cpu_first - 1) * 100:+.1f}%)")
ok = True
def check(cond, what):
    global ok
    print(("PASS: " if cond else "FAIL: ") + what)
    ok = ok and cond
check(abs(rss_slope) < 1.0, f"RSS slope {rss_slope:+.4f} MiB per 1000 steps (limit 1)")
check(fd_last <= fd_first, "open file descriptors do not grow")
check(th_last <= th_first, "threads do not grow")
check(abs(cpu_last / cpu_first - 1) < 0.10, "CPU time per step within 10% between the first and last quarter")
sys.exit(0 if ok else 1)
PY
