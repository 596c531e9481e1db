#!/usr/bin/env bash
# The mDBC list kept across rebuilds for static walls on a device alone (merged from the branch
# exp/mdbc-fixed; `SURGE_CUDA_MDBC_FIXED=0` lists at every rebuild), checked and measured in
# one call on one GPU: OLD is an earlier surge to compare with (run twice: is it
# deterministic?), DIR holds surge and the test binaries decomposition, gpu_parity,
# physics_hydrostatic.
#   1. bitwise: Test 2 (mDBC) at dp 0.02 to 0.3 s and dp 0.012 to 0.15 s, OLD against DIR's,
#      and DIR's with SURGE_CUDA_MDBC_FIXED=0 (every frame and gauges.csv);
#   2. the developed flow with mDBC at dp 0.006, alternated, with and without it;
#   3. on the GPU: decomposition (windows that move keep it honest), gpu_parity, the mDBC
#      hydrostatic tests.
# Usage: scripts/mdbc_fixed_check.sh OLD DIR OUT. Prints one table last (also OUT/table.txt).
set -uo pipefail
[ $# -ge 3 ] || { sed -n 2,12p "$0"; exit 2; }
OLD=$(realpath "$1") DIR=$(realpath "$2") OUT=$3
mkdir -p "$OUT"
row() { echo "$1" | tee -a "$OUT/table.txt"; }
sum() { (cd "$1" && find . -name '*.vtu' -o -name gauges.csv | sort | xargs md5sum | md5sum | cut -c1-12); }
for cfg in "--set dp=0.02 --set time.end=0.3" "--set dp=0.012 --set time.end=0.15"; do
    sums=()
    for v in old old2 new off; do
        rm -rf "/tmp/fx_$v"; b=$DIR/surge; case $v in old*) b=$OLD ;; esac
        SURGE_CUDA_MDBC_FIXED=$([ $v = off ] && echo 0 || echo 1) "$b" run configs/spheric_test2.toml $cfg \
            --set output.interval=0.05 --backend cuda --out "/tmp/fx_$v" --quiet >>"$OUT/runs.log" 2>&1 ||
            echo "$v failed: $cfg" >>"$OUT/runs.log"
        sums+=("$(sum /tmp/fx_$v)")
    done
    row "spheric_test2 $cfg: old ${sums[0]} old again ${sums[1]} new ${sums[2]} off ${sums[3]} $([ "${sums[0]}" = "${sums[2]}" ] && [ "${sums[2]}" = "${sums[3]}" ] && echo BITWISE || echo DIFFER)"
done
b() { SURGE_CUDA_MDBC_FIXED=$1 "$DIR/surge" bench --backend cuda --cases dam-break3d --set dp=0.006 --steps 200 \
    --develop-to 0.3 --set 'physics.boundary={kind="mdbc",slip=true}' 2>>"$OUT/bench.log" | tee -a "$OUT/bench.log" |
    grep -E '^dam_break' | tail -n 1 | awk '{print $7, $(NF-3)}'; }
off=(); on=()
for r in 1 2; do off+=("$(b 0)"); on+=("$(b 1)"); done
row "mDBC developed, list every rebuild: ${off[*]}"
row "mDBC developed, list kept:          ${on[*]}"
for t in decomposition physics_hydrostatic; do
    SURGE_TEST_BACKEND=cuda timeout $([ $t = decomposition ] && echo 100 || echo 60) "$DIR/$t" --test-threads 1 >>"$OUT/tests.log" 2>&1 &&
        row "$t (cuda): passed" || row "$t (cuda): FAILED"
done
timeout 240 "$DIR/gpu_parity" --ignored >>"$OUT/tests.log" 2>&1 && row "gpu_parity: passed" || row "gpu_parity: FAILED"
echo; cat "$OUT/table.txt"
