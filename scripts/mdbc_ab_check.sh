#!/usr/bin/env bash
# A change to the mDBC ghost pass that must leave every bit as it was, checked and measured in
# one call on one GPU. OLD is main's surge; DIR holds the new surge and the test binaries
# decomposition, gpu_parity, physics_hydrostatic, open; SWITCH names the environment variable
# that turns the change off in DIR's surge (SWITCH=0), the same binary as a control.
#   1. bitwise: Test 2 (mDBC) at dp 0.02 to 0.3 s and dp 0.012 to 0.15 s, OLD against DIR's
#      with and without the change (every frame and gauges.csv);
#   2. the developed flow at dp 0.006 (`surge bench ... --develop-to 0.3`): OLD, DIR's with
#      and without the change (mDBC), and OLD with DBC, alternated twice, ms/step;
#   3. on the GPU: decomposition (teams and one device bitwise equal), physics_hydrostatic,
#      open (the open boundaries' ghost nodes), gpu_parity (every config).
# Usage: scripts/mdbc_ab_check.sh OLD DIR SWITCH OUT [NAME=ENV ...]: each NAME=ENV also times
# DIR's surge with ENV set (e.g. q4=SURGE_CUDA_GHOST_GATHER_Q=4) in step 2 and checks its bits
# in step 1. Prints one table last (also OUT/table.txt).
set -uo pipefail
[ $# -ge 4 ] || { sed -n 2,13p "$0"; exit 2; }
OLD=$(realpath "$1") DIR=$(realpath "$2") SWITCH=$3 OUT=$4
shift 4
mkdir -p "$OUT"
row() { echo "$1" | tee -a "$OUT/table.txt"; }
sum() { (cd "$1" && find . -name '*.vtu' -o -name gauges.csv | sort | xargs md5sum | md5sum | cut -c1-12); }
for cfg in "--set dp=0.02 --set time.end=0.3" "--set dp=0.012 --set time.end=0.15"; do
    sums=() line=""
    for v in old new off "$@"; do
        tag=${v%%=*} extra=""; [ "$tag" != "$v" ] && extra=${v#*=}
        rm -rf "/tmp/ab_$tag"; b=$DIR/surge; [ $v = old ] && b=$OLD
        env "$SWITCH=$([ $v = off ] && echo 0 || echo 1)" $extra "$b" run configs/spheric_test2.toml $cfg \
            --set output.interval=0.05 --backend cuda --out "/tmp/ab_$tag" --quiet >>"$OUT/runs.log" 2>&1 ||
            echo "$tag failed: $cfg" >>"$OUT/runs.log"
        sums+=("$(sum /tmp/ab_$tag)")
        line+=" $([ $v = off ] && echo "$SWITCH=0" || echo "$tag") ${sums[-1]}"
    done
    same=BITWISE
    for x in "${sums[@]}"; do [ "$x" = "${sums[0]}" ] || same=DIFFER; done
    row "spheric_test2 $cfg:$line $same"
done
b() { env "$SWITCH=$2" ${4:-} "$1" bench --backend cuda --cases dam-break3d --set dp=0.006 --steps 200 --develop-to 0.3 \
    --set "physics.boundary=$3" 2>>"$OUT/bench.log" | tee -a "$OUT/bench.log" | grep -E '^dam_break' | tail -n 1 |
    awk '{print $7}'; }
M='{kind="mdbc",slip=true}'
declare -A r
for round in 1 2; do
    r[old]+="$(b "$OLD" 1 "$M") "
    r[new]+="$(b "$DIR/surge" 1 "$M") "
    r[off]+="$(b "$DIR/surge" 0 "$M") "
    r[dbc]+="$(b "$OLD" 1 '{kind="dbc"}') "
    for v in "$@"; do r[${v%%=*}]+="$(b "$DIR/surge" 1 "$M" "${v#*=}") "; done
done
row "developed flow ms/step, DBC (old): ${r[dbc]}"
row "developed flow ms/step, mDBC old: ${r[old]}"
row "developed flow ms/step, mDBC new: ${r[new]}"
row "developed flow ms/step, mDBC new, $SWITCH=0: ${r[off]}"
for v in "$@"; do row "developed flow ms/step, mDBC new, ${v#*=}: ${r[${v%%=*}]}"; done
for t in decomposition physics_hydrostatic open gpu_parity; do
    [ -x "$DIR/$t" ] || { row "$t: not in $DIR"; continue; }
    if [ $t = gpu_parity ]; then
        timeout 240 "$DIR/$t" --ignored >>"$OUT/tests.log" 2>&1
    else
        SURGE_TEST_BACKEND=cuda timeout 150 "$DIR/$t" --test-threads 1 >>"$OUT/tests.log" 2>&1
    fi && row "$t (cuda): passed" || row "$t (cuda): FAILED"
done
echo; cat "$OUT/table.txt"
