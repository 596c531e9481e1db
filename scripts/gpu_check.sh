#!/usr/bin/env bash
# GPU check: on a host with an NVIDIA GPU and the release binaries built here
# (scripts/build_for_gpu.sh puts them in .device/), run the CUDA parity test, the physics
# test suite on the CUDA backend, and the GPU benchmark; print a short table last.
# Usage: [PARTS="a b"] scripts/gpu_check.sh [BIN_DIR] [LOG_DIR]
# Part a is the parity tests and the decompositions (about 480 s on an H200), part b the
# physics suite, a run with its restart and the benchmarks (about 470 s): PARTS=a and
# PARTS=b each fit in one device call of 600 s, both together do not.
# A BIN_DIR holding bins.tar.xz (PACK=1 scripts/build_for_gpu.sh) is unpacked first.
set -uo pipefail
bin=${1:-.device}
logs=${2:-${OUT:-/tmp/surge-gpu-check}}
parts=" ${PARTS:-a b} "
case "$parts" in *" a "*|*" b "*) ;; *) echo "error: PARTS='${PARTS:-}': expected a, b or \"a b\"" >&2; exit 2 ;; esac
mkdir -p "$logs"
if [ -f "$bin/bins.tar.xz" ] && [ ! -x "$bin/surge" ]; then
    tar xJf "$bin/bins.tar.xz" -C "$bin" || { echo "error: $bin/bins.tar.xz: cannot unpack it" >&2; exit 2; }
fi
status=()
run() { # name, command...
    local name=$1; shift
    echo "=== $name"
    if "$@" >"$logs/$name.log" 2>&1; then status+=("$name: ok"); else status+=("$name: FAILED (see $name.log)"); fi
    tail -n 25 "$logs/$name.log"
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$logs/gpu.txt"
run info "$bin/surge" info
if [[ $parts == *" a "* ]]; then
run parity "$bin/gpu_parity" --ignored --nocapture --test-threads 1
# The cell table of one bin a cell (what grids past 2^31 cells take): the same parity.
run parity_one_bin env SURGE_CUDA_TABLE_BINS=1 "$bin/gpu_parity" --ignored --nocapture --test-threads 1 --skip a_case_streamed
# The shared-memory traversals' teams of devices bitwise one device, as ranges' are (their
# blocks start elsewhere in a team; tests/common: SURGE_TEST_TRAVERSAL).
for t in pencil cta; do
    [ -x "$bin/decomposition" ] && run "cuda_decomposition_$t" env SURGE_TEST_BACKEND=cuda SURGE_TEST_TRAVERSAL=$t \
        "$bin/decomposition" --nocapture --test-threads 1
done
fi
if [[ $parts == *" b "* ]]; then
for t in physics_channel_flows physics_hydrostatic physics_taylor_green physics_wall_function physics_dam_break physics_loads determinism motion bodies open removal; do
    [ -x "$bin/$t" ] && run "cuda_$t" env SURGE_TEST_BACKEND=cuda "$bin/$t" --nocapture --test-threads 1
done
# A floating box settling to its Archimedes draft at dp = 0.005, and a floating column's heave
# decay against its linear period at dp = 0.0125 (5 minutes on an H100) (tests/bodies.rs).
[ -x "$bin/bodies" ] && run cuda_bodies_draft env SURGE_TEST_BACKEND=cuda "$bin/bodies" --ignored --nocapture
# A user's run end to end on the GPU: frames, gauges and summary, a checkpoint, then a
# restart that extends the run (its summary must say completed and restarted_from).
run run_gpu "$bin/surge" run configs/dam_break_2d.toml --backend cuda --out "$logs/run" --quiet \
    --set time.end=0.1 --set checkpoint.interval=0.05
run restart_gpu "$bin/surge" run configs/dam_break_2d.toml --backend cuda --out "$logs/run" --quiet \
    --restart latest --set time.end=0.15 --set checkpoint.interval=0.05
grep -h '"status"\|"restarted_from"\|"backend"\|"steps"' "$logs/run/summary.json" | tee "$logs/run_summary.txt"
ls "$logs/run/frames" | wc -l | sed 's/^/frames written: /'
run bench_cpu "$bin/surge" bench --backend cpu --steps 20
run bench_gpu "$bin/surge" bench --backend cuda --steps 200
run bench_3d_5M "$bin/surge" bench --backend cuda --cases dam-break3d --steps ${BENCH_STEPS:-100} --set dp=0.006
fi
echo
echo "=== summary"
printf '%s\n' "${status[@]}"
grep -h "dam_break" "$logs/bench_gpu.log" "$logs/bench_3d_5M.log" "$logs/bench_cpu.log" 2>/dev/null
