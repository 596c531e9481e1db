#!/usr/bin/env bash
# SPHERIC Test 2's physics tries in one call: `configs/spheric_test2.toml` at dp DP (0.006) to
# t = T (0.6 s, past P1's impact and into its plateau) as shipped, then once per variant
# NAME='OPTIONS' (options for `surge run`, split on spaces, so a TOML value is written without
# any: "--set physics.viscosity.alpha=0.02 --set time.cfl=0.15"), and one
# table last: each run's steps, ms/step, particles removed and the figures of
# scripts/spheric_test2_compare.py against the experiment (the issue's tolerances: 15 %,
# 0.02 s, 10 %). Logs, summaries and gauges in OUT.
#
#   scripts/spheric_test2_variants.sh SURGE OUT [NAME='OPTIONS' ...]   DP=0.006 T=0.6 BACKEND=cuda SHIPPED=1
#
# SHIPPED=0 leaves out the shipped run (its figures are known: the runs are deterministic).
# e.g. scripts/spheric_test2_variants.sh .device/surge $OUT lind="--set physics.shifting={kind=\"lind\"}"
# Reads nothing outside the repository but SURGE and OUT.
set -uo pipefail
[ $# -ge 2 ] || { sed -n 2,14p "$0"; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
S=$(realpath "$1") OUT=$2
shift 2
mkdir -p "$OUT"
DP=${DP:-0.006} T=${T:-0.6} BACKEND=${BACKEND:-cuda}
ref=$repo/tests/data/spheric_test2_kleefsman2005.csv
rows=()
run() { # name, options (one word, split on spaces)
    local tag=$1 dir=/tmp/spheric_test2_variants_$1
    local -a opts
    read -r -a opts <<<"$2"
    rm -rf "$dir"
    if ! "$S" run "$repo/configs/spheric_test2.toml" --backend "$BACKEND" --out "$dir" --set "dp=$DP" \
        --set "time.end=$T" --set output.interval=100 "${opts[@]}" >"$OUT/run_$tag.log" 2>&1; then
        rows+=("$tag: failed ($OUT/run_$tag.log)")
        return
    fi
    cp "$dir/summary.json" "$OUT/summary_$tag.json"
    cp "$dir/gauges.csv" "$OUT/gauges_$tag.csv"
    python3 "$repo/scripts/spheric_test2_compare.py" "$dir/gauges.csv" "$ref" >"$OUT/compare_$tag.txt"
    # The compare table's difference column (the field before the unit and within/OUTSIDE;
    # "-" where the run is too short for the figure), in the table's order.
    local diffs
    diffs=$(awk '/ (within|OUTSIDE)$/ { printf " %9s", $(NF-2) } / n\/a$/ { printf " %9s", "-" }' "$OUT/compare_$tag.txt")
    rows+=("$(python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
print(f\"{sys.argv[2]:10s} {s['steps']:7d} {s['ms_per_step']:8.3f} {s['removed_particles']:7d}\", end='')
" "$OUT/summary_$tag.json" "$tag")$diffs")
}
[ "${SHIPPED:-1}" = 0 ] || run shipped ""
for v in "$@"; do run "${v%%=*}" "${v#*=}"; done
echo
echo "Test 2 at dp $DP to t = $T s ($BACKEND); differences from the experiment, % or s (scripts/spheric_test2_compare.py)"
printf '%-10s %7s %8s %7s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n' run steps ms/step removed \
    P1peak plateau H1wet H2wet H3wet H1max H2max H3max H4max
printf '%s\n' "${rows[@]}"
