#!/usr/bin/env bash
# The force kernel's neighbour traversals side by side on one GPU (issue 16):
#   scripts/traversal_bench.sh SURGE OUT [VARIANTS...]      (default: cells ranges)
# Each variant (`--set gpu.traversal=V`) on scripts/ab_bench.sh's cases: SPHERIC Test 2 at
# dp 0.006 developed and at rest, alternately, twice; then mDBC walls, h = 1.3 dp and a 2D
# dam break of 1.04 M particles. Prints one table (ms/step of each variant per case) last.
set -uo pipefail
[ $# -ge 2 ] || { sed -n 2,6p "$0"; exit 2; }
S=$1 OUT=$2
shift 2
variants=()
for v in ${*:-cells ranges}; do variants+=("$S,gpu.traversal=$v"); done
exec "$(dirname "$0")/ab_bench.sh" "$OUT" "${variants[@]}"
