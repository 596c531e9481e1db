#!/usr/bin/env bash
# The GPU's skin (`SURGE_CUDA_SKIN`, a fraction of the kernel support) judged as
# docs/PERFORMANCE.md ("A thinner skin") judged it, in one call on one GPU:
#   scripts/skin_bench.sh BIN OUT bench SKIN [SKIN ...]   the middle of the run (t = 0.75 s,
#       `surge bench --cases dam-break3d --set dp=0.006 --steps 200`), the skins alternated
#       twice; SURGE_SKIN_SETS="--set ..." adds settings (e.g. mDBC walls)
#   scripts/skin_bench.sh BIN OUT run SKIN [SKIN ...]     whole runs, one after another:
#       `surge run $SURGE_SKIN_CONFIG --set dp=$SURGE_SKIN_DP`, to its end time unless
#       SURGE_SKIN_END; each run is stopped (a checkpoint written) after SURGE_SKIN_LIMIT
#       seconds (default 320), so that a cut run still gives its ms/step over its log.
# Defaults: configs/dam_break_3d.toml, dp 0.006. A thin skin saves candidates in every force
# pass where a developed flow rebuilds every step anyway; a wide one saves rebuilds where the
# flow is slow, so a choice is made by whole runs. Prints one table last; logs in OUT.
set -uo pipefail
[ $# -ge 4 ] || { sed -n 2,14p "$0"; exit 2; }
BIN=$1 OUT=$2 MODE=$3
shift 3
SKINS=("$@")
mkdir -p "$OUT"
read -r -a SETS <<<"${SURGE_SKIN_SETS:-}"
rows=()
case "$MODE" in
bench)
    for rep in 1 2; do
        for s in "${SKINS[@]}"; do
            row=$(SURGE_CUDA_SKIN=$s "$BIN" bench --backend cuda --cases dam-break3d --set dp=0.006 \
                --steps 200 "${SETS[@]}" 2>>"$OUT/bench.log" | grep -E '^dam_break' | tail -n 1)
            # ms/step: the third number after the device's name "(...)"
            rows+=("skin $s, round $rep: $(echo "$row" | sed 's/^[^)]*) *//' | awk '{print $3 " ms/step, " $4 " particle-steps/s"}')")
        done
    done
    ;;
run)
    config=${SURGE_SKIN_CONFIG:-configs/dam_break_3d.toml}
    end=()
    [ -n "${SURGE_SKIN_END:-}" ] && end=(--set "time.end=$SURGE_SKIN_END")
    for s in "${SKINS[@]}"; do
        log="$OUT/run_$s.log"
        SURGE_CUDA_SKIN=$s timeout -s TERM "${SURGE_SKIN_LIMIT:-320}" "$BIN" run "$config" --backend cuda \
            --set "dp=${SURGE_SKIN_DP:-0.006}" "${end[@]}" --set output.interval=100 "${SETS[@]}" \
            --out "$OUT/run_$s" >"$log" 2>&1
        # The run's own figure, or (cut by the limit) the mean over its progress lines.
        done_line=$(grep 'INFO done:' "$log" | sed 's/.*INFO done: //')
        if [ -z "$done_line" ]; then
            done_line=$(sed -n 's/.*t = \([0-9.]*\) \/ .*step \([0-9]*\),.* \([0-9.]*\) ms\/step since the last line.*/\1 \2 \3/p' "$log" |
                awk '{ms += ($2 - s) * $3; s = $2; t = $1} END { if (s) printf "cut at t = %s s, step %d: %.3f ms/step", t, s, ms / s }')
        fi
        rows+=("skin $s: $done_line")
    done
    ;;
*) sed -n 2,14p "$0"; exit 2 ;;
esac
echo
printf '%s\n' "${rows[@]}" | tee "$OUT/table.txt"
