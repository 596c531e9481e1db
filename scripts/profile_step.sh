#!/usr/bin/env bash
# Where a step's device time goes, kernel by kernel (Nsight Compute, `ncu`), for the developed
# 3D dam break at dp 0.006 with each wall model (issue 13: mDBC's cost over DBC). For each
# boundary the bench first steps the flow to t = 0.3 s and caches it (not profiled); ncu then
# times every kernel of the bench's warm-up and STEPS steps from the cache. Prints, per boundary,
# each kernel's device time a step (its total over the force passes) and launches; ncu's rows
# in OUT.
#   scripts/profile_step.sh [SURGE] [OUT]       DP=0.006 T=0.3 STEPS=20 BOUNDS="dbc mdbc"
set -uo pipefail
S=${1:-.device/surge}
OUT=${2:-${OUT:-/tmp/profile-step}}
DP=${DP:-0.006} T=${T:-0.3} STEPS=${STEPS:-20}
mkdir -p "$OUT"
command -v ncu >/dev/null || { echo "ncu not found (Nsight Compute)"; exit 2; }
for b in ${BOUNDS:-dbc mdbc}; do
    case $b in
        dbc) set -- --set 'physics.boundary={kind="dbc"}' ;;
        mdbc) set -- --set 'physics.boundary={kind="mdbc",slip=true}' ;;
        *) set -- --set "physics.boundary=$b" ;;
    esac
    bench=(bench --backend cuda --cases dam-break3d --set "dp=$DP" --develop-to "$T" "$@")
    "$S" "${bench[@]}" --steps 1 >"$OUT/develop_$b.log" 2>&1 || { echo "developing ($b) failed: $OUT/develop_$b.log"; continue; }
    ncu --clock-control none --csv --metrics gpu__time_duration.sum "$S" "${bench[@]}" --steps "$STEPS" \
        >"$OUT/ncu_$b.csv" 2>"$OUT/ncu_$b.err"
    echo "== $b (dp $DP, from t = $T s, $STEPS steps; ms a step, launches)"
    # ncu --csv: one row per launch: ..., "Kernel Name", ..., "Metric Value" last.
    python3 - "$OUT/ncu_$b.csv" "$STEPS" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 5]
head = rows[0]; k = head.index("Kernel Name"); v = len(head) - 1
tot, cnt = {}, {}
for r in rows[1:]:
    if r[v] in ("", "Metric Value"): continue
    name = r[k].split("(")[0]
    ns = float(r[v].replace(",", ""))
    unit = r[head.index("Metric Unit")] if "Metric Unit" in head else "nsecond"
    ms = ns * {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0}.get(unit, 1e-6)
    tot[name] = tot.get(name, 0.0) + ms; cnt[name] = cnt.get(name, 0) + 1
# A step is one force pass (a device alone): the bench's warm-up steps count too.
steps = cnt.get("forces_kernel", int(sys.argv[2]))
print(f"{steps} force passes profiled")
for name in sorted(tot, key=lambda n: -tot[n]):
    print(f"{name:32s} {tot[name] / steps:8.3f} ms {cnt[name]:6d}")
print(f"{'all':32s} {sum(tot.values()) / steps:8.3f} ms")
PY
done
