#!/usr/bin/env bash
# SPHERIC Test 2 (Kleefsman et al. 2005, the MARIN dam break on a box) in one command: run the
# case, plot its gauges against the experiment, print each gauge's peak and its time.
#
#   scripts/spheric_test2.sh [SURGE_BIN] [OUT] [surge run options ...]
#
#   SURGE_BIN  the surge binary [default: build one with cargo, target/release/surge]; with it
#              no Rust toolchain is needed (a GPU host: scripts/spheric_test2.sh .device/surge)
#   OUT        output directory [default: out/spheric_test2 in the repository]
#   options    passed to `surge run`, e.g. --set dp=0.006 --backend cuda --set time.end=1.5
#   CASE=FILE  environment: another case with the gauges P1..P8, H1..H4
#              [default: configs/spheric_test2.toml]
#
# Writes OUT/gauges.csv, frames and summary.json (surge run), then
#   OUT/plots/*.png                  every gauge as sampled, with the experiment;
#   OUT/plots/pressure_avg10ms/*.png the pressures P1..P8 and the experiment, both as 10-ms
#                                    centred moving averages, as SPHERIC compares them.
# The experiment is tests/data/spheric_test2_kleefsman2005.csv when it is there (plots
# without it otherwise), and scripts/spheric_test2_compare.py prints the figures compared with
# it. Reads nothing outside the repository but SURGE_BIN and OUT.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
surge=""
out=""
if [[ $# -gt 0 && $1 != -* ]]; then
    surge=$1
    shift
fi
if [[ $# -gt 0 && $1 != -* ]]; then
    out=$1
    shift
fi
case_file=${CASE:-$repo/configs/spheric_test2.toml}
out=${out:-$repo/out/spheric_test2}
reference=$repo/tests/data/spheric_test2_kleefsman2005.csv

die() {
    echo "spheric_test2: $*" >&2
    exit 2
}
[[ -f $case_file ]] || die "$case_file: no such case file (CASE=FILE for another)"
if [[ -z $surge ]]; then
    command -v cargo >/dev/null || die "no SURGE_BIN given and no cargo to build one: scripts/spheric_test2.sh PATH/TO/surge"
    (cd "$repo" && cargo build --release --quiet)
    surge=${CARGO_TARGET_DIR:-$repo/target}/release/surge
fi
[[ -x $surge ]] || die "$surge: not an executable surge binary"

echo "== surge run $case_file -> $out"
"$surge" run "$case_file" --out "$out" "$@"

ref_args=()
if [[ -f $reference ]]; then
    ref_args=(--reference "$reference")
else
    echo "spheric_test2: no $reference: plots without the experiment" >&2
fi
echo "== surge plot"
all=$("$surge" plot "$out" ${ref_args[@]+"${ref_args[@]}"})
averaged=$("$surge" plot "$out" --only 'P*' --average 0.01 --out "$out/plots/pressure_avg10ms" ${ref_args[@]+"${ref_args[@]}"})

echo
echo "== peaks, as sampled (plots in $out/plots)"
echo "$all"
echo
echo "== pressure peaks, 10-ms averages (plots in $out/plots/pressure_avg10ms)"
echo "$averaged"

# The issue's figures against the experiment (P1's averaged peak and plateau, first wetting
# and maximum heights), when the experiment's file and python3 are there.
if [[ -f $reference ]] && command -v python3 >/dev/null; then
    echo
    python3 "$repo/scripts/spheric_test2_compare.py" "$out/gauges.csv" "$reference"
fi
