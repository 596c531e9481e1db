#!/usr/bin/env bash
# The time step on the device (`Backend::update_device_dt`: a device alone with Verlet and no
# moving solids, floating bodies or open boundaries; `SURGE_DEVICE_DT=0` takes it from the
# host), checked and measured in one call on one GPU:
#   1. bitwise: runs with and without it (the 3D dam break at dp 0.012 to 0.5 s, Test 2 with
#      mDBC at dp 0.02 to 0.3 s, the 2D dam break), every frame and gauges.csv by md5;
#   2. decomposition (one device, which takes it, against 2-4, which do not: bitwise),
#      removal (a collapsing step stops and says why) and gpu_parity on the GPU, where DIR
#      holds them;
#   3. `surge bench --backend cuda --cases dam-break3d --set dp=0.006 --steps 200` at rest
#      (6 rounds) and developed to 0.3 s (3 rounds), alternated.
# Usage: scripts/device_dt_check.sh DIR OUT (DIR: surge and the test binaries). Prints one
# table last; logs in OUT. BENCH=0 leaves out the benches (3).
set -uo pipefail
[ $# -ge 2 ] || { sed -n 2,12p "$0"; exit 2; }
DIR=$(realpath "$1") OUT=$2
mkdir -p "$OUT"
rows=()
for cfg in "configs/dam_break_3d.toml --set dp=0.012 --set time.end=0.5 --set output.interval=0.1" \
           "configs/spheric_test2.toml --set dp=0.02 --set time.end=0.3 --set output.interval=0.1" \
           "configs/dam_break_2d.toml --set time.end=0.5 --set output.interval=0.1"; do
    sums=()
    for on in 0 1; do
        rm -rf "/tmp/ddt_$on"
        SURGE_DEVICE_DT=$on "$DIR/surge" run $cfg --backend cuda --out "/tmp/ddt_$on" --quiet >>"$OUT/runs.log" 2>&1 ||
            echo "SURGE_DEVICE_DT=$on failed: $cfg" >>"$OUT/runs.log"
        sums+=("$(cd "/tmp/ddt_$on" && find . -name '*.vtu' -o -name gauges.csv | sort | xargs md5sum | md5sum | cut -c1-12)")
    done
    rows+=("${cfg%% *}: $([ "${sums[0]}" = "${sums[1]}" ] && echo "bitwise equal" || echo "DIFFER (${sums[0]} / ${sums[1]})")")
done
for t in decomposition removal; do
    [ -x "$DIR/$t" ] || continue
    SURGE_TEST_BACKEND=cuda timeout 200 "$DIR/$t" --test-threads 1 >>"$OUT/tests.log" 2>&1 &&
        rows+=("$t (cuda): passed") || rows+=("$t (cuda): FAILED (tests.log)")
done
[ -x "$DIR/gpu_parity" ] && { timeout 200 "$DIR/gpu_parity" --ignored >>"$OUT/tests.log" 2>&1 &&
    rows+=("gpu_parity: passed") || rows+=("gpu_parity: FAILED (tests.log)"); }
b() { SURGE_DEVICE_DT=$1 "$DIR/surge" bench --backend cuda --cases dam-break3d --set dp=0.006 --steps 200 "${@:2}" \
    2>>"$OUT/bench.log" | tee -a "$OUT/bench.log" | grep -E '^dam_break' | tail -n 1 | awk '{print $7}'; }
[ "${BENCH:-1}" = 0 ] && set -- || set -- "0 6" "0.3 3"
for w in "$@"; do
    set -- $w
    off=(); on=()
    for r in $(seq "$2"); do off+=("$(b 0 --develop-to "$1")"); on+=("$(b 1 --develop-to "$1")"); done
    rows+=("develop-to $1, host dt: ${off[*]}" "develop-to $1, device dt: ${on[*]}")
done
echo
printf '%s\n' "${rows[@]}"
