#!/usr/bin/env bash
# MPI ranks on one GPU node: with `surge` (no MPI) and `surge-mpi` (built with
# `--features mpi`) in BIN_DIR (scripts/build_for_gpu.sh makes both), check that
# `mpirun -n 2` with one GPU per rank and with two GPUs per rank gives bitwise the particles
# and gauges of one process on the same GPUs, then time 4 ranks x 1 GPU against 1 rank x 4
# GPUs on the ~34 M particle 3D dam break. Prints a table last.
# Usage: scripts/gpu_mpi_check.sh [BIN_DIR] [LOG_DIR]   (STEPS=50 timed steps)
set -uo pipefail
bin=${1:-.device}
logs=${2:-${OUT:-/tmp/surge-gpu-mpi}}
steps=${STEPS:-50}
mkdir -p "$logs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none"
status=()
run="run configs/dam_break_2d.toml --backend cuda -q --max-steps 300 --set checkpoint.interval=100"
dump() { # out dir -> sorted particle lines
    local f
    f=$(ls "$1"/checkpoints/*.surge | tail -n 1)
    "$bin/surge" dump "$f" --csv "$1/p.csv" >/dev/null 2>&1
    tail -n +2 "$1/p.csv" | sort -t, -k1,1n >"$1/p.sorted"
}
same() { # name dirA dirB
    dump "$2"; dump "$3"
    if cmp -s "$2/p.sorted" "$3/p.sorted" && cmp -s "$2/gauges.csv" "$3/gauges.csv"; then
        status+=("$1: bitwise identical ($(wc -l <"$2/p.sorted") particles, gauges too)")
    else
        status+=("$1: DIFFERENT")
    fi
}
"$bin/surge" $run --devices 0 --out "$logs/one_gpu" >"$logs/one_gpu.log" 2>&1
CUDA_VISIBLE_DEVICES=0,1 "$bin/surge" $run --devices 0,1 --out "$logs/proc_2gpu" >"$logs/proc_2gpu.log" 2>&1
CUDA_VISIBLE_DEVICES=0,1 $mpi -n 2 "$bin/surge-mpi" $run --out "$logs/mpi_2x1" >"$logs/mpi_2x1.log" 2>&1 || status+=("mpi_2x1: FAILED")
$mpi -n 2 "$bin/surge-mpi" $run --out "$logs/mpi_2x2" >"$logs/mpi_2x2.log" 2>&1 || status+=("mpi_2x2: FAILED")
same "1 process x 2 GPUs vs 1 GPU" "$logs/one_gpu" "$logs/proc_2gpu"
same "2 ranks x 1 GPU vs 1 GPU" "$logs/one_gpu" "$logs/mpi_2x1"
same "2 ranks x 2 GPUs vs 1 GPU" "$logs/one_gpu" "$logs/mpi_2x2"
grep -h "rank .* on \|MPI ranks" "$logs/mpi_2x2.log" | head -4
bench="bench --backend cuda --cases dam-break3d --steps $steps --set dp=0.00289"
row() { grep "^dam_break_3d" "$1" | tail -n 1 | awk '{for(i=1;i<=NF;i++) if ($i ~ /^[0-9]+\.[0-9]+$/ && $(i+1) ~ /e\+/) {print $i" ms/step, "$(i+1)" particle-steps/s"; exit}}'; }
"$bin/surge" $bench --devices 0,1,2,3 >"$logs/bench_1x4.log" 2>&1
$mpi -n 4 "$bin/surge-mpi" $bench >"$logs/bench_4x1.log" 2>&1
$mpi -n 2 "$bin/surge-mpi" $bench >"$logs/bench_2x2.log" 2>&1
echo
echo "=== summary"
printf '%s\n' "${status[@]}"
echo "1 rank x 4 GPUs : $(row "$logs/bench_1x4.log")"
echo "4 ranks x 1 GPU : $(row "$logs/bench_4x1.log")"
echo "2 ranks x 2 GPUs: $(row "$logs/bench_2x2.log")"
