#!/usr/bin/env bash
# Everything about several GPUs on one node in one go (within ~10 minutes on 4 x H200):
# the decomposition and device tests on the GPUs, the MPI checks (bitwise against one GPU,
# CUDA IPC and host links), then the scaling harness: strong (~34 M particles) and weak
# (~17.7 M per GPU, tank widened) series over 1, 2, 4 GPUs in one process, and the same
# with one MPI rank per GPU. Prints the tables last; logs, CSVs and plots under LOG_DIR.
# Usage: scripts/gpu_node_check.sh [BIN_DIR] [LOG_DIR]   (after scripts/build_for_gpu.sh)
# Environment: STEPS (timed steps, 50), LIST (GPUs per process, e.g. 1,4; default 1,2,4),
# SETS ("KEY=VALUE ..." for every run, e.g. decomposition.balance=false), SKIP_CHECKS=1
# (the scaling series only), SKIP_RANKS=1 (no series with one rank per GPU).
set -uo pipefail
bin=${1:-.device}
logs=${2:-${OUT:-/tmp/surge-gpu-node}}
steps=${STEPS:-50}
mkdir -p "$logs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ngpu=$(nvidia-smi -L | wc -l)
list=${LIST:-$( [ "$ngpu" -ge 4 ] && echo 1,2,4 || seq -s, 1 "$ngpu")}
sets=()
for kv in ${SETS:-}; do sets+=(--set "$kv"); done
if [ "${SKIP_CHECKS:-0}" != 1 ]; then
    SKIP_BENCH=1 bash scripts/gpu_devices_check.sh "$bin" "$logs/devices" >"$logs/devices.txt" 2>&1
    SKIP_BENCH=1 bash scripts/gpu_mpi_check.sh "$bin" "$logs/mpi" >"$logs/mpi.txt" 2>&1
fi
launcher="mpirun --allow-run-as-root --oversubscribe --bind-to none -n {ranks}"
harness() { # out-name, options...
    local name=$1; shift
    "$bin/scaling" --backend cuda --case dam-break3d --strong-dp 0.00289 --weak-dp1 0.00364 --steps "$steps" \
        --surge "$bin/surge-mpi" --launcher "$launcher" --out "$logs/$name" "${sets[@]}" "$@" >"$logs/$name.txt" 2>&1
}
harness process --ranks 1 --devices-per-rank "$list"
[ "$ngpu" -ge 2 ] && [ "${SKIP_RANKS:-0}" != 1 ] && harness ranks --ranks "$ngpu" --devices-per-rank 1
echo "=== checks"
grep -hE ": ok|FAILED|bitwise|DIFFERENT|halo exchanges" "$logs/devices.txt" "$logs/mpi.txt" 2>/dev/null
for t in process ranks; do
    [ -f "$logs/$t/scaling.md" ] || continue
    echo "=== $t"
    grep "^|" "$logs/$t/scaling.md"
done
