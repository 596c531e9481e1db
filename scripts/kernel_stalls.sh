#!/usr/bin/env bash
# Why the force pass and the mDBC ghost pass wait (Nsight Compute, `ncu`): one launch of each
# in the developed 3D dam break at dp 0.006 with mDBC free-slip walls, with ncu's warp-state
# (stall reasons), scheduler, occupancy and source-counter sections. The bench first steps the
# flow to t = T s and caches it (not profiled).
#   scripts/kernel_stalls.sh [SURGE] [OUT]      DP=0.006 T=0.3 KERNELS="forces_kernel|mdbc_kernel"
# Writes OUT/stalls.txt (ncu's text report) and prints each kernel's stall reasons, largest first.
set -uo pipefail
S=${1:-.device/surge}
OUT=${2:-${OUT:-/tmp/kernel-stalls}}
DP=${DP:-0.006} T=${T:-0.3} K=${KERNELS:-forces_kernel|mdbc_kernel}
mkdir -p "$OUT"
command -v ncu >/dev/null || { echo "ncu not found (Nsight Compute)"; exit 2; }
bench=(bench --backend cuda --cases dam-break3d --set "dp=$DP" --develop-to "$T"
    --set 'physics.boundary={kind="mdbc",slip=true}')
"$S" "${bench[@]}" --steps 1 >"$OUT/develop.log" 2>&1 || { echo "developing failed: $OUT/develop.log"; exit 1; }
ncu --clock-control none -k "regex:$K" --launch-skip 6 --launch-count 2 \
    --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
    --section SourceCounters --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    "$S" "${bench[@]}" --steps 5 >"$OUT/stalls.txt" 2>"$OUT/ncu.err"
# Each kernel's "Stall ..." metrics of the raw page, largest first.
ncu --clock-control none -k "regex:$K" --launch-skip 6 --launch-count 2 \
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$' --csv \
    "$S" "${bench[@]}" --steps 5 >"$OUT/stall_metrics.csv" 2>>"$OUT/ncu.err"
python3 - "$OUT/stall_metrics.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 5]
if not rows:
    sys.exit("no ncu rows: see ncu.err")
head = rows[0]; k = head.index("Kernel Name"); m = head.index("Metric Name"); v = len(head) - 1
per = {}
for r in rows[1:]:
    name = r[k].split("(")[0]
    reason = r[m].replace("smsp__average_warps_issue_stalled_", "").replace("_per_issue_active.ratio", "")
    try:
        per.setdefault(name, {})[reason] = float(r[v].replace(",", ""))
    except ValueError:
        pass
for name, d in per.items():
    top = sorted(d.items(), key=lambda x: -x[1])[:8]
    print(f"{name}: warps stalled per issued instruction, by reason: " + ", ".join(f"{a} {b:.2f}" for a, b in top))
PY
