#!/usr/bin/env bash
# MPI ranks on one GPU node: with `surge` (no MPI) and `surge-mpi` (built with
# `--features mpi`) in BIN_DIR (scripts/build_for_gpu.sh makes both), check that
# `mpirun -n 2` with one GPU per rank (CUDA IPC between the ranks, and through host memory
# with SURGE_DEVICE_LINKS=host), and with two devices per rank (IPC between the ranks, and
# host memory there with SURGE_DEVICE_LINKS=process), gives
# bitwise the particles and gauges of one process, then time N ranks x 1 GPU (IPC and host)
# against 1 rank x N GPUs on the ~34 M particle 3D dam break, N = the node's GPUs (2 or 4).
# On a node with one GPU, both ranks share it. Prints a table last.
# Usage: scripts/gpu_mpi_check.sh [BIN_DIR] [LOG_DIR]   (STEPS=50 timed steps; SKIP_BENCH=1: checks only)
set -uo pipefail
bin=${1:-.device}
logs=${2:-${OUT:-/tmp/surge-gpu-mpi}}
steps=${STEPS:-50}
mkdir -p "$logs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none"
ngpu=$(nvidia-smi -L | wc -l)
all=$(seq -s, 0 $((ngpu - 1)))
status=()
run="run configs/dam_break_2d.toml --backend cuda --max-steps 300 --set checkpoint.interval=100"
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
# Two GPUs for the 2-rank runs (one shared by both where the node has one).
two=$([ "$ngpu" -ge 2 ] && echo 0,1 || echo 0)
pair=$([ "$ngpu" -ge 2 ] && echo 0,1 || echo 0,0)
"$bin/surge" $run --devices 0 --out "$logs/one_gpu" >"$logs/one_gpu.log" 2>&1
CUDA_VISIBLE_DEVICES=$two "$bin/surge" $run --devices $pair --out "$logs/proc_2" >"$logs/proc_2.log" 2>&1
CUDA_VISIBLE_DEVICES=$two $mpi -n 2 "$bin/surge-mpi" $run --out "$logs/mpi_2x1" >"$logs/mpi_2x1.log" 2>&1 || status+=("mpi_2x1: FAILED")
CUDA_VISIBLE_DEVICES=$two $mpi -n 2 -x SURGE_DEVICE_LINKS=host "$bin/surge-mpi" $run --out "$logs/mpi_2x1_host" \
    >"$logs/mpi_2x1_host.log" 2>&1 || status+=("mpi_2x1_host: FAILED")
same "1 process x 2 devices vs 1 GPU" "$logs/one_gpu" "$logs/proc_2"
same "2 ranks x 1 GPU (IPC) vs 1 GPU" "$logs/one_gpu" "$logs/mpi_2x1"
same "2 ranks x 1 GPU (host) vs 1 GPU" "$logs/one_gpu" "$logs/mpi_2x1_host"
# Two devices per rank (on a node with fewer than 4 GPUs, each rank's two devices share
# the GPUs): links within a rank are peer copies, the link between the ranks CUDA IPC, or
# host memory with SURGE_DEVICE_LINKS=process (links of both kinds in one run).
two_each=$([ "$ngpu" -ge 4 ] && echo "" || echo "--devices $pair")
$mpi -n 2 "$bin/surge-mpi" $run $two_each --out "$logs/mpi_2x2" >"$logs/mpi_2x2.log" 2>&1 || status+=("mpi_2x2: FAILED")
$mpi -n 2 -x SURGE_DEVICE_LINKS=process "$bin/surge-mpi" $run $two_each --out "$logs/mpi_2x2_mixed" \
    >"$logs/mpi_2x2_mixed.log" 2>&1 || status+=("mpi_2x2_mixed: FAILED")
same "2 ranks x 2 devices vs 1 GPU" "$logs/one_gpu" "$logs/mpi_2x2"
same "2 ranks x 2 devices, host between ranks, vs 1 GPU" "$logs/one_gpu" "$logs/mpi_2x2_mixed"
if [ "$ngpu" -lt 2 ] || [ "${SKIP_BENCH:-0}" = 1 ]; then
    echo; echo "=== summary"; printf '%s\n' "${status[@]}"; grep -h "halo exchanges" "$logs"/mpi_2x*.log; exit 0
fi
bench="bench --backend cuda --cases dam-break3d --steps $steps --develop-to 0 --set dp=0.00289"
row() { # bench --json file -> one line
    python3 - "$1" 2>/dev/null <<'PY' || echo "no result (see the log)"
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
s = d["seconds"]
print(f"{d['ms_per_step']:.2f} ms/step, {d['particle_steps_per_second']:.3e} particle-steps/s, "
      f"rebuilds {d['stages']['rebuild'] / s * 100:.0f} %, exposed {d['exposed'] / s * 100:.1f} %")
PY
}
"$bin/surge" $bench --devices "$all" --json "$logs/bench_1x$ngpu.json" >"$logs/bench_1x$ngpu.log" 2>&1
$mpi -n "$ngpu" "$bin/surge-mpi" $bench --json "$logs/bench_${ngpu}x1.json" >"$logs/bench_${ngpu}x1.log" 2>&1
$mpi -n "$ngpu" -x SURGE_DEVICE_LINKS=host "$bin/surge-mpi" $bench --json "$logs/bench_${ngpu}x1_host.json" \
    >"$logs/bench_${ngpu}x1_host.log" 2>&1
echo
echo "=== summary"
printf '%s\n' "${status[@]}"
for f in "$logs"/mpi_2x*.log; do echo "$(basename "$f" .log): $(grep -ho "halo exchanges.*" "$f" | head -n 1)"; done
echo "1 rank x $ngpu GPUs       : $(row "$logs/bench_1x$ngpu.json")"
echo "$ngpu ranks x 1 GPU (IPC) : $(row "$logs/bench_${ngpu}x1.json")"
echo "$ngpu ranks x 1 GPU (host): $(row "$logs/bench_${ngpu}x1_host.json")"
