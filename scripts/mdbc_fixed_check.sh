#!/usr/bin/env bash
# The mDBC list kept across rebuilds for static walls on a device alone (merged from the branch
# exp/mdbc-fixed; `SURGE_CUDA_MDBC_FIXED=0` lists at every rebuild), checked and measured in
# one call on one GPU: scripts/mdbc_ab_check.sh with that switch. OLD is an earlier surge to
# compare with, DIR holds surge and the test binaries decomposition, gpu_parity,
# physics_hydrostatic (and open):
#   1. bitwise: Test 2 (mDBC) at dp 0.02 to 0.3 s and dp 0.012 to 0.15 s, OLD against DIR's
#      with and without the kept list (every frame and gauges.csv);
#   2. the developed flow with mDBC at dp 0.006, alternated, with and without it;
#   3. on the GPU: decomposition (windows that move keep it honest), gpu_parity, the mDBC
#      hydrostatic tests.
# Usage: scripts/mdbc_fixed_check.sh OLD DIR OUT. Prints one table last (also OUT/table.txt).
set -uo pipefail
[ $# -ge 3 ] || { sed -n 2,12p "$0"; exit 2; }
exec "$(dirname "$0")/mdbc_ab_check.sh" "$1" "$2" SURGE_CUDA_MDBC_FIXED "$3"
