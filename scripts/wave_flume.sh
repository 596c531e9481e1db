#!/usr/bin/env bash
# Wave flume check (issue 14): on a host with an NVIDIA GPU and the test binaries built here
# (scripts/build_for_gpu.sh puts them in .device/), run the ignored tests of
# tests/wave_flume.rs on the CUDA backend, configs/wave_flume_2d.toml to t = 20 s, one test at
# a time (the second-order test runs the flume twice): wave height and period at three gauges,
# the damping zone's reflection coefficient, the free second harmonic with first- and
# second-order paddle signals. One log per test; a short table last.
# Usage: scripts/wave_flume.sh [BIN_DIR] [LOG_DIR]
#   BIN_DIR  holds the wave_flume test binary [default: .device in the repository]
#   LOG_DIR  [default: $OUT, else /tmp/surge-flume]
#   SURGE_FLUME_DP=0.005 (environment): a finer run than the file's dp = 0.01 m.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath -m "${1:-$repo/.device}")
logs=$(realpath -m "${2:-${OUT:-/tmp/surge-flume}}")
mkdir -p "$logs"
if [ ! -x "$bin/wave_flume" ]; then
    echo "wave_flume: no test binary $bin/wave_flume (scripts/build_for_gpu.sh builds it)" >&2
    exit 2
fi
# The tests read configs/ from the repository root when the sources are not where they were built.
cd "$repo"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$logs/gpu.txt"
[ -n "${SURGE_FLUME_DP:-}" ] && echo "SURGE_FLUME_DP=$SURGE_FLUME_DP"
status=()
for t in regular_waves_have_the_height_and_period_asked the_damping_zone_reflects_little \
    second_order_generation_removes_the_free_second_harmonic an_irregular_sea_follows_its_spectrum_wave_by_wave; do
    echo "=== $t"
    start=$SECONDS
    if SURGE_TEST_BACKEND=cuda "$bin/wave_flume" --ignored --nocapture --test-threads 1 --exact "$t" \
        >"$logs/$t.log" 2>&1; then
        status+=("$t: ok ($((SECONDS - start)) s)")
    else
        status+=("$t: FAILED ($((SECONDS - start)) s, see $t.log)")
    fi
    grep -v "^    up-crossing at" "$logs/$t.log" | tail -n 25
done
echo
echo "=== summary (logs in $logs)"
printf '%s\n' "${status[@]}"
# The measured figures: height and period per gauge, Kr, the free second harmonics.
grep -h "mean H = " "$logs/regular_waves_have_the_height_and_period_asked.log" 2>/dev/null
grep -h "Kr = " "$logs/the_damping_zone_reflects_little.log" 2>/dev/null | sed 's/, window .*(\([0-9]* periods\)): / (\1): /'
grep -h ": window .*free \|mean free second harmonic" \
    "$logs/second_order_generation_removes_the_free_second_harmonic.log" 2>/dev/null | sed 's/: first harmonic .* free /: free /'
grep -h "correlation" "$logs/an_irregular_sea_follows_its_spectrum_wave_by_wave.log" 2>/dev/null
