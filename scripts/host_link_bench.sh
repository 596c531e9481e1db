#!/usr/bin/env bash
# The host-staged link (what ranks on different nodes use) against CUDA IPC, on one node
# with two GPUs: `mpirun -n 2` (one GPU per rank) of the ~34 M particle 3D dam break, each
# MPI binary given (built with `--features mpi`) with IPC and with SURGE_DEVICE_LINKS=host,
# alternated ROUNDS times. Prints ms/step and each rebuild's stages (SURGE_LOG=debug: the
# gather and copy out, the receive, the upload and sort; means over the rebuilds after the
# first, which allocates) last.
# Usage: scripts/host_link_bench.sh LOG_DIR SURGE_MPI [SURGE_MPI...]   (STEPS=300, ROUNDS=1)
set -uo pipefail
logs=$1
shift
steps=${STEPS:-300}
rounds=${ROUNDS:-1}
mkdir -p "$logs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none -n 2 -x SURGE_LOG=debug"
bench="bench --backend cuda --cases dam-break3d --steps $steps --develop-to 0 --set dp=0.00289"
for r in $(seq "$rounds"); do
    for b in "$@"; do
        for link in ipc host; do
            name="$(basename "$b")_${link}_$r"
            env=$([ $link = host ] && echo "-x SURGE_DEVICE_LINKS=host" || echo "")
            # shellcheck disable=SC2086
            $mpi $env "$b" $bench --json "$logs/$name.json" >"$logs/$name.log" 2>&1 || echo "$name: FAILED"
        done
    done
done
python3 - "$logs" <<'PY'
import glob, json, os, re, sys
print(f"{'run':34} {'ms/step':>8} {'rebuilds':>8} {'begin ms':>9} {'receive ms':>10} {'end ms':>7}")
for j in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    d = json.loads(open(j).read().strip().splitlines()[-1])
    stages = [tuple(map(float, m)) for m in re.findall(
        r"rebuild: begin ([\d.]+) ms, send [\d.]+ ms, receive ([\d.]+) ms .*?, end ([\d.]+) ms",
        open(j[:-5] + ".log").read())]
    later = stages[2:]  # both devices' first rebuild allocates
    mean = [sum(s[k] for s in later) / len(later) for k in range(3)] if later else [float("nan")] * 3
    n = d.get("rebuilds", len(stages) // 2 - 1)
    print(f"{os.path.basename(j)[:-5]:34} {d['ms_per_step']:8.2f} {n:>8} {mean[0]:9.1f} {mean[1]:10.1f} {mean[2]:7.1f}")
PY
