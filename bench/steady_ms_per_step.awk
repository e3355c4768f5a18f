# Steady-state time per step from a timestamped training log (each line prefixed with
# $EPOCHREALTIME as it arrived; logging_steps 1): (t(last step) - t(first logged step)) /
# (last - first), so start-up and the first step are left out. Prints "steps ms_per_step".
#   awk -f bench/steady_ms_per_step.awk LOG
/^[0-9.]+ \{.*"grad_norm":.*"step":/ {
  if (match($0, /"step":[0-9]+/)) {
    s = substr($0, RSTART + 7, RLENGTH - 7) + 0
    t[s] = $1
    if (first == "" || s < first) first = s
    if (s > last) last = s
  }
}
END {
  if (last > first) printf "%d %.1f\n", last - first, 1000 * (t[last] - t[first]) / (last - first)
  else print "0 nan"
}
