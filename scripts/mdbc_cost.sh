#!/usr/bin/env bash
# mDBC's cost over DBC a step (issue 13: at most 15 % on the Test 2 benchmark), over whole
# runs of the shipped case from rest, in one call on one GPU: `configs/spheric_test2.toml` at
# dp DP (0.006) to t = T (0.6 s) with DBC walls and as shipped (mDBC free slip), then each
# extra variant given as NAME=ENV (e.g. skin1=SURGE_CUDA_SKIN=0.01, relist=SURGE_CUDA_MDBC_FIXED=0).
# Prints one table last (steps, ms/step, particle-steps/s, removed, rebuild share, bytes a
# particle, mDBC over DBC a step); logs, summaries and gauges in OUT.
#   scripts/mdbc_cost.sh SURGE OUT [NAME=ENV ...]        DP=0.006 T=0.6
set -uo pipefail
[ $# -ge 2 ] || { sed -n 2,8p "$0"; exit 2; }
S=$(realpath "$1") OUT=$2; shift 2
mkdir -p "$OUT"
DP=${DP:-0.006} T=${T:-0.6}
rows=()
run() {
    local tag=$1 env=$2; shift 2
    rm -rf "/tmp/mdbc_cost_$tag"
    env $env "$S" run configs/spheric_test2.toml --backend cuda --set "dp=$DP" --set "time.end=$T" \
        --set output.interval=100 --out "/tmp/mdbc_cost_$tag" "$@" >"$OUT/run_$tag.log" 2>&1 ||
        { rows+=("$tag: failed ($OUT/run_$tag.log)"); return; }
    cp "/tmp/mdbc_cost_$tag/summary.json" "$OUT/summary_$tag.json"
    cp "/tmp/mdbc_cost_$tag/gauges.csv" "$OUT/gauges_$tag.csv" 2>/dev/null
    rows+=("$(python3 - "$OUT/summary_$tag.json" "$tag" "${DBC_MS:-}" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
over = f"{100 * (s['ms_per_step'] / float(sys.argv[3]) - 1):+.1f} %" if sys.argv[3] else ""
print(f"{sys.argv[2]:10s} {s['steps']:7d} {s['ms_per_step']:8.3f} {s['particle_steps_per_second']:10.3e} "
      f"{s['removed_particles']:7d} {100 * s['rebuild_share']:6.1f} % {s['bytes_per_particle']:5d}  {over}")
PY
)")
}
run dbc "" --set 'physics.boundary={kind="dbc"}'
DBC_MS=$(python3 -c "import json; print(json.load(open('$OUT/summary_dbc.json'))['ms_per_step'])" 2>/dev/null)
run shipped ""
for v in "$@"; do run "${v%%=*}" "${v#*=}"; done
echo
printf '%-10s %7s %8s %10s %7s %8s %5s  %s\n' run steps ms/step p-steps/s removed rebuilds B/p "over DBC"
printf '%s\n' "${rows[@]}"
