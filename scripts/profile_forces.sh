#!/usr/bin/env bash
# Where the force pass's time goes as the flow develops (issue 16: a step of SPHERIC Test 2
# costs 7.0 ms near rest and 8.4 near its end on an H100; docs/PERFORMANCE.md, "The whole
# run against the bench"). On a GPU host with Nsight Compute (`ncu`):
#   scripts/profile_forces.sh [SURGE] [OUT]        TIMES="0.3 1.2" by default, dp 0.006
# For each time T the bench first steps the flow there and caches it (not profiled), then ncu
# measures 10 force passes from the cache: time, warp instructions, active lanes of 32 and
# issue use of forces_kernel. Prints one table last; ncu's reports in OUT.
set -uo pipefail
S=${1:-.device/surge}
OUT=${2:-${OUT:-/tmp/profile-forces}}
DP=${DP:-0.006}
mkdir -p "$OUT"
command -v ncu >/dev/null || { echo "ncu not found (Nsight Compute)"; exit 2; }
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__thread_inst_executed_per_inst_executed.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active
rows=()
for t in ${TIMES:-0.3 1.2}; do
    bench=(bench --backend cuda --cases dam-break3d --set "dp=$DP" --develop-to "$t")
    "$S" "${bench[@]}" --steps 1 >"$OUT/develop_$t.log" 2>&1 || { echo "developing to t = $t failed: $OUT/develop_$t.log"; continue; }
    ncu --clock-control none --kernel-name forces_kernel --launch-count 10 --metrics "$metrics" \
        --print-summary per-kernel "$S" "${bench[@]}" --steps 10 >"$OUT/ncu_$t.txt" 2>&1
    # The summary's line of each metric: name, unit, minimum, maximum, average; the average
    # and the unit.
    val() { grep -m1 "$1" "$OUT/ncu_$t.txt" | awk '{print $NF, (NF > 4 ? $2 : "")}'; }
    rows+=("$(printf '%-6s %-22s %-22s %-14s %s' "$t" "$(val gpu__time_duration)" "$(val smsp__inst_executed.sum)" \
        "$(val thread_inst_executed_per)" "$(val issue_active)")")
done
echo
printf '%-6s %-22s %-22s %-14s %s\n' "t (s)" "force pass" "warp instructions" "lanes of 32" "issue busy %"
printf '%s\n' "${rows[@]}"
