#!/usr/bin/env bash
# Several GPUs in one process: on a host with 2 or more NVIDIA GPUs and the binaries built
# here (scripts/build_for_gpu.sh), check that N GPUs give bitwise the particles of 1 GPU
# (the decomposition tests on the CUDA backend, also streamed in small slabs with the one-bin
# cell table), then measure strong scaling (fixed
# ~34 M particles on 1, 2, 4 GPUs, load balancer on and off) and weak scaling (~17.7 M per
# GPU, the tank widened with the GPU count) on the SPHERIC 3D dam break. Prints a table last.
# Usage: scripts/gpu_devices_check.sh [BIN_DIR] [LOG_DIR]   (STEPS=100 timed steps)
set -uo pipefail
bin=${1:-.device}
logs=${2:-${OUT:-/tmp/surge-gpu-devices}}
steps=${STEPS:-100}
mkdir -p "$logs"
ngpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader | tee "$logs/gpus.txt"
"$bin/surge" info | tee "$logs/info.txt"
status=()
check() { # name, command...
    local name=$1; shift
    if "$@" >"$logs/$name.log" 2>&1; then status+=("$name: ok"); else status+=("$name: FAILED (see $name.log)"); fi
    grep -E "^test |test result" "$logs/$name.log" | tail -n 12
}
[ -x "$bin/decomposition" ] && check cuda_decomposition env SURGE_TEST_BACKEND=cuda "$bin/decomposition" --nocapture --test-threads 1
# Each device streaming its layers in slabs of 3000 particles, and the cell table of one bin
# a cell: still bitwise one device.
[ -x "$bin/decomposition" ] && check cuda_decomposition_slabs env SURGE_SLAB_PARTICLES=3000 SURGE_CUDA_TABLE_BINS=1 \
    SURGE_TEST_BACKEND=cuda "$bin/decomposition" --nocapture --test-threads 1
[ -x "$bin/devices" ] && check cuda_devices env SURGE_REQUIRE_GPU=1 "$bin/devices" --nocapture --test-threads 1
[ -x "$bin/peer_copy" ] && [ "$ngpu" -ge 2 ] && check peer_copy "$bin/peer_copy" --nocapture
[ "${SKIP_BENCH:-0}" = 1 ] && { printf '%s\n' "${status[@]}"; exit 0; }
# bench NAME DEVICES DP BALANCE [--set ...]
bench() {
    local name=$1 devs=$2 dp=$3 bal=$4
    shift 4
    "$bin/surge" bench --backend cuda --devices "$devs" --cases dam-break3d --steps "$steps" --develop-to 0 \
        --set dp="$dp" --set decomposition.balance="$bal" --set decomposition.balance_every=20 "$@" \
        >"$logs/$name.log" 2>&1 || status+=("$name: FAILED")
    local row
    row=$(grep "^dam_break_3d" "$logs/$name.log" | tail -n 1)
    echo "$name devices=$devs dp=$dp balance=$bal | $row" | tee -a "$logs/bench_table.txt"
}
all() { seq -s, 0 $(($1 - 1)); }
# Strong scaling: ~34 M particles (dp 0.00289).
for n in 1 2 4; do
    [ "$n" -le "$ngpu" ] || continue
    bench strong_${n}gpu_lb "$(all $n)" 0.00289 true
done
[ "$ngpu" -ge 4 ] && bench strong_4gpu_nolb "$(all 4)" 0.00289 false
# Weak scaling: ~17.7 M per GPU (dp 0.00364), the tank n times as wide along y (as the
# scaling harness's --weak-mode widen): the same work on every GPU, efficiency t(1) / t(n).
for n in 1 2 4; do
    [ "$n" -le "$ngpu" ] || continue
    bench weak_${n}gpu_lb "$(all $n)" 0.00364 true --set "fluid.0.max=[3.22, $n, 0.55]" \
        --set "wall.0.max=[3.22, $n, 1.0]"
done
echo
echo "=== summary"
printf '%s\n' "${status[@]}"
cat "$logs/bench_table.txt"
