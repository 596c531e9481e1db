#!/usr/bin/env bash
# The force kernel's neighbour traversals side by side on one GPU (issue 16):
#   scripts/traversal_bench.sh SURGE OUT [VARIANTS...]      (default: cells ranges)
# Each variant (`--set gpu.traversal=V`) is timed alternately, twice, on the SPHERIC Test 2
# benchmark at dp 0.006 (at rest and from a checkpoint of the developed flow at t = 0.3 s),
# then once with mDBC walls, with h = 1.3 dp, and on a 2D dam break of 1.04 M particles.
# Prints one table (ms/step of each variant per case) last; logs in OUT.
set -uo pipefail
S=$1 OUT=$2
shift 2
VARIANTS=${*:-cells ranges}
mkdir -p "$OUT"
CK="$OUT/developed"
if [ ! -d "$CK/checkpoints" ]; then
    "$S" run configs/dam_break_3d.toml --backend cuda --quiet --out "$CK" --set dp=0.006 --set time.end=0.3 \
        --set checkpoint.interval=0.3 --set output.interval=10 >"$OUT/developed.log" 2>&1
fi
ckpt=$(ls -d "$CK"/checkpoints/* 2>/dev/null | sort | tail -n 1)
declare -A res
bench() { # name variant args...
    local name=$1 v=$2
    shift 2
    local row
    row=$("$S" bench --backend cuda --set gpu.traversal=$v "$@" 2>>"$OUT/bench.log" | grep -E '^dam_break' | tail -n 1)
    echo "$name $v $row" >>"$OUT/rows.txt"
    # ms/step: the third number after the device's name "(...)"
    res[$name.$v]="${res[$name.$v]:-}$(echo "$row" | sed 's/^[^)]*) *//' | awk '{print $3}') "
}
for rep in 1 2; do
    for v in $VARIANTS; do
        bench "test2-rest" "$v" --cases dam-break3d --set dp=0.006 --steps 100 --develop-to 0
        [ -n "$ckpt" ] && bench "test2-developed" "$v" --cases dam-break3d --set dp=0.006 --steps 100 --from "$ckpt"
    done
done
for v in $VARIANTS; do
    bench "test2-mdbc" "$v" --cases dam-break3d --set dp=0.006 --steps 100 --set 'physics.boundary={kind="mdbc",slip=true}'
    bench "test2-h1.3" "$v" --cases dam-break3d --set dp=0.006 --set h_over_dp=1.3 --steps 100 --develop-to 0
    bench "2d-1M" "$v" --cases dam-break2d --set dp=0.0014 --steps 200
done
printf '%-16s' case; for v in $VARIANTS; do printf ' %-22s' "$v ms/step"; done; echo
for c in test2-rest test2-developed test2-mdbc test2-h1.3 2d-1M; do
    printf '%-16s' $c
    for v in $VARIANTS; do printf ' %-22s' "${res[$c.$v]:-}"; done
    echo
done
