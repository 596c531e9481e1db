#!/usr/bin/env bash
# Variants side by side on one GPU, in one call (what a kernel change is judged by,
# docs/PERFORMANCE.md). A variant is a surge binary, with `--set`s after commas:
#   scripts/ab_bench.sh OUT VARIANT VARIANT [...]         e.g.
#   scripts/ab_bench.sh /tmp/ab .device/surge_old .device/surge
#   scripts/ab_bench.sh /tmp/ab .device/surge,gpu.traversal=cells .device/surge,gpu.traversal=ranges
# SPHERIC Test 2 at dp 0.006 (`surge bench --cases dam-break3d`): the developed flow (the
# bench's checkpoint at t = 0.3 s, made once by the first variant: a shorter warm-up than the
# bench's default, the run's middle; SURGE_AB_DEVELOP_TO=T another moment) and the first steps at
# rest, each variant in turn, twice; then once each with mDBC free-slip walls (developed),
# with h = 1.3 dp (at rest) and the 2D dam break of 1.04 M particles (developed).
# SURGE_AB_QUICK=1 times only the first two cases. Prints one table (ms/step) last; logs in OUT.
set -uo pipefail
[ $# -ge 3 ] || { sed -n 2,12p "$0"; exit 2; }
OUT=$1
shift
VARIANTS=("$@")
mkdir -p "$OUT"
T2=(--cases dam-break3d --set dp=0.006)
DEV=(--develop-to "${SURGE_AB_DEVELOP_TO:-0.3}")
declare -A res
bench() { # case index args...
    local name=$1 i=$2 row bin sets=()
    shift 2
    IFS=, read -r -a sets <<<"${VARIANTS[$i]}"
    bin=${sets[0]}
    local extra=()
    for s in "${sets[@]:1}"; do extra+=(--set "$s"); done
    row=$("$bin" bench --backend cuda "$@" "${extra[@]}" 2>>"$OUT/bench.log" | grep -E '^dam_break' | tail -n 1)
    echo "$name ${VARIANTS[$i]} $row" >>"$OUT/rows.txt"
    # ms/step: the third number after the device's name "(...)"
    res[$name.$i]="${res[$name.$i]:-}$(echo "$row" | sed 's/^[^)]*) *//' | awk '{print $3}') "
}
# The developed flow's checkpoint, cached by the bench, before any timing.
bench warm-up 0 "${T2[@]}" "${DEV[@]}" --steps 5
cases=(test2-developed test2-rest)
for rep in 1 2; do
    for i in "${!VARIANTS[@]}"; do
        bench test2-developed "$i" "${T2[@]}" "${DEV[@]}" --steps 100
        bench test2-rest "$i" "${T2[@]}" --steps 100 --develop-to 0
    done
done
if [ "${SURGE_AB_QUICK:-0}" != 1 ]; then
    cases+=(test2-mdbc test2-h1.3 2d-1M)
    for i in "${!VARIANTS[@]}"; do
        bench test2-mdbc "$i" "${T2[@]}" "${DEV[@]}" --steps 100 --set 'physics.boundary={kind="mdbc",slip=true}'
        bench test2-h1.3 "$i" "${T2[@]}" --steps 100 --set h_over_dp=1.3 --develop-to 0
        bench 2d-1M "$i" --cases dam-break2d --set dp=0.0014 "${DEV[@]}" --steps 200
    done
fi
printf '%-16s' case; for v in "${VARIANTS[@]}"; do printf ' %-24s' "$(basename "$v")"; done; echo
for c in "${cases[@]}"; do
    printf '%-16s' "$c"
    for i in "${!VARIANTS[@]}"; do printf ' %-24s' "${res[$c.$i]:-}"; done
    echo
done
