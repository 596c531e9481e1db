#!/usr/bin/env bash
# SPHERIC Test 2 with the reservoir's gate modelled: a plate 0.16 m thick against the water's
# face (x 1.832-1.992 m, 0.6 m tall), lifted at SPEED m/s from t = 0 by a `table` motion,
# added to configs/spheric_test2.toml; then scripts/spheric_test2_compare.py against the
# experiment. The experiment's lift is not published: docs/PERFORMANCE.md ("The gate at the
# benchmark resolution") has what the speeds give.
#
#   scripts/spheric_test2_gate.sh SURGE OUT SPEED [surge run options...]
#   e.g. scripts/spheric_test2_gate.sh .device/surge /tmp/gate 2.5 --backend cuda --set dp=0.006 --set time.end=0.6 --set output.interval=1.0
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
surge=$1 out=$2 speed=$3
shift 3
repo="$(cd "$(dirname "$0")/.." && pwd)"
# Lifted for 0.6 s, then held (the plate's top stays inside the domain to 2.5 m/s).
python3 - "$speed" "$out/lift.csv" <<'PY' || exit 2
import sys
try:
    v = float(sys.argv[1])
except ValueError:
    v = float("nan")
if not 0 < v <= 2.5:
    sys.exit(f"error: SPEED: expected a number of m/s above 0 and at most 2.5 (the plate's top leaves the domain beyond), found '{sys.argv[1]}'")
import os
os.makedirs(os.path.dirname(sys.argv[2]), exist_ok=True)
open(sys.argv[2], "w").write(f"0, 0, 0, 0\n0.6, 0, 0, {0.6 * v!r}\n")
PY
{
    cat "$repo/configs/spheric_test2.toml"
    printf '\n[[obstacle]]\nname = "gate"\nmin = [1.832, 0.0, 0.0]\nmax = [1.992, 1.0, 0.6]\nmotion = { kind = "table", file = "lift.csv" }\n'
} >"$out/spheric_test2_gate.toml"
"$surge" run "$out/spheric_test2_gate.toml" --out "$out/run" "$@"
python3 "$repo/scripts/spheric_test2_compare.py" "$out/run/gauges.csv" "$repo/tests/data/spheric_test2_kleefsman2005.csv"
