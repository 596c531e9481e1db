#!/usr/bin/env bash
# SPHERIC Test 2 at dp 0.006 on one GPU: DualSPHysics 5.0 (its own case, Spheric2Dam_04M) and
# surge (configs/dam_break_3d.toml, the benchmark's geometry, its tank closed at 1 m as the
# peer's, set to the same physics) in one call, DBC and mDBC, with the peer's gauges patched to
# read P1 as surge does. For each boundary: ms/step, particle-steps/s and bytes/particle of
# both codes, and (GAUGE_DT small) both codes' figures against the experiment
# (scripts/spheric_test2_compare.py).
#
# Usage: scripts/peer_test2.sh PEER_DIR SURGE_BINARY [TMAX=0.4]
#   PEER_DIR: the DualSPHysics side-by-side folder (its prepare.sh and source archive; not part
#   of this repository: copy it into an ignored folder sent to the GPU machine, e.g. .device/).
#   Needs nvcc and g++ there. Env: BOUNDS="mdbc dbc", GAUGE_DT (s, default TMAX: no gauges
#   to speak of; 0.0002 for the comparison), SURGE_PHYSICS=peer|shipped (default peer: mDBC
#   with the wall's velocity and the walls' viscosity a fifth, as the peer's case; shipped:
#   configs/spheric_test2.toml's, mDBC with free slip and the fluid's viscosity at the walls),
#   BUDGET (s, default 570), OUT (default /tmp/peer-test2), CODES (default "dsph surge": which
#   codes run; one alone, for figures against the experiment from a run longer than one call
#   can hold both; speeds side by side only from one call that ran both), SURGE_TOP=capped|open
#   (default capped: surge's tank closed at 1 m as the peer's case closes its own; open, the
#   config's open top, was the only form before 2026-12-03's thirtieth session), KEEP_PEER_BIN=1
#   (the built peer comes back as OUT/dsph_bin.tgz; put it in PEER_DIR and the next call skips
#   the build, about 40 s).
# The gauge files come back as OUT/gauges_{dsph,surge}_BOUNDARY.csv (a peer's run stopped by
# the budget leaves its own gauge files in OUT/dsph_BOUNDARY_gauges_raw.tgz); to draw both against the
# experiment: surge plot OUT/gauges_surge_mdbc.csv --only P1,H2,H3 --average 0.01
#   --reference tests/data/spheric_test2_kleefsman2005.csv --reference OUT/gauges_dsph_mdbc.csv
#
# The same physics: Wendland h = 2 dp, c0 = 20 sqrt(g H), artificial viscosity 0.1 (0.02 at
# the walls: the peer case's ViscoBoundFactor 0.2), Fourtakas density diffusion 0.1, CFL 0.2,
# Verlet. The peer's mDBC has one slip mode, the wall's velocity (surge's slip = "wall").
# Its geometry: walls at half a dp outside the boundary particles, so its floor is at
# z = 0.003 and the box's front face at x = 0.825; its P1 is read 0.021 m above its floor.
# The peer's P1 is its velocity gauge patched to sum p W m/rho and W m/rho (Shepard, fluid
# only, as surge's pressure gauge), p from the Tait equation with the case's B (CteB, read
# from its log: the patch's constant is rescaled to it).
set -u
here=$(cd "$(dirname "$0")" && pwd); root=$(dirname "$here")
[ $# -ge 2 ] || { echo "usage: $0 PEER_DIR SURGE_BINARY [TMAX]" >&2; exit 2; }
[ -f "$1/prepare.sh" ] || { echo "$1: no prepare.sh (expected the peer's side-by-side folder)" >&2; exit 2; }
[ -x "$2" ] || { echo "$2: not an executable surge binary" >&2; exit 2; }
top=()   # surge's tank: closed at 1 m as the peer's, or the config's open top
case ${SURGE_TOP:-capped} in capped) top=(--set 'wall.0.faces=["x-","x+","y-","y+","z-","z+"]') ;; open) ;;
  *) echo "SURGE_TOP=$SURGE_TOP: expected capped or open" >&2; exit 2 ;; esac
PEER=$(realpath "$1"); S=$(realpath "$2"); T=${3:-0.4}
OUT=${OUT:-/tmp/peer-test2}; mkdir -p "$OUT"; GDT=${GAUGE_DT:-$T}
exec > >(tee -a "$OUT/peer_test2.txt") 2>&1
t0=$SECONDS
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
NVCC=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1); TK=$(dirname "$(dirname "$NVCC")")
W=/tmp/dsph-peer-t2 X=/tmp/dsph-peer-t2/bin/linux/DualSPHysics_linux64
B0=308314.3   # the patch's Tait B: 1000 (20 sqrt(9.81 0.55))^2 / 7
has() { case " ${CODES:-dsph surge} " in *" $1 "*) return 0 ;; esac; return 1; }
left() { echo $(( ${BUDGET:-570} - (SECONDS-t0) )); }   # seconds of the budget left
C=$W/test_linux/_DataCases_Ds5Test
if has dsph; then   # the peer's build and case (to the matching fi)
if [ ! -x $X ]; then
  bash "$PEER/prepare.sh" $W >/dev/null
  if [ -f "$PEER/dsph_bin.tgz" ]; then   # a build of an earlier call
    tar xzf "$PEER/dsph_bin.tgz" -C $W && echo "DualSPHysics from $PEER/dsph_bin.tgz"
  else   # build it, its P1 gauge patched
    python3 - $W/src/source/JGauge_ker.cu $B0 <<'PY'
import sys
p, b = sys.argv[1], sys.argv[2]; s = open(p, encoding='latin-1').read()
for old, new in [("  sumvel.x+=wab*velrhopp2.x;\n", "  sumvel.x+=wab*(SURGE_B*(powf(velrhopp2.w*0.001f,7.f)-1.f));\n"),
                 ("    ptvel[0]=make_float3(float(sumvel.x),float(sumvel.y),float(sumvel.z));\n",
                  "    ptvel[0]=make_float3(float(sumvel.x),float(sumwab),float(sumvel.z));\n")]:
    assert s.count(old) == 1, old
    s = s.replace(old, new)
open(p, 'w', encoding='latin-1').write(f"#define SURGE_B {b}f\n" + s)
PY
    (cd $W/src/source && make -j"$(nproc)" CUDA=00 DIRTOOLKIT="$TK" > "$OUT/dsph_build.log" 2>&1) \
      || { echo "DualSPHysics build failed: $OUT/dsph_build.log"; exit 1; }
    echo "DualSPHysics built in $((SECONDS-t0)) s"
    [ "${KEEP_PEER_BIN:-0}" = 1 ] && tar czf "$OUT/dsph_bin.tgz" -C $W bin/linux/DualSPHysics_linux64
  fi
fi
python3 - $C/Spheric2Dam_04M.xml $C/T2.xml $GDT <<'PY'
import sys
s = open(sys.argv[1]).read(); dt = sys.argv[3]
for old, new in [('<normals active="false">', '<normals active="true">'),
                 ('<parameter key="TimeOut" value="0.01"', '<parameter key="TimeOut" value="0.05"'),
                 ('</execution>', '<special><gauges><default>'
                  f'<computedt value="{dt}"/><output value="true"/><outputdt value="{dt}"/></default>'
                  '<velocity name="P1"><point x="0.825" y="0.471" z="0.024"/></velocity>'
                  + "".join(f'<swl name="H{k + 1}"><point0 x="{x}" y="0.5" z="0.003"/><point2 x="{x}" y="0.5" z="0.95"/>'
                            '<pointdp coefdp="0.25"/><masslimit coef="0.5"/></swl>'
                            for k, x in enumerate([0.496, 0.992, 1.488, 2.638]))
                  + '</gauges></special></execution>')]:
    assert s.count(old) == 1, old
    s = s.replace(old, new)
open(sys.argv[2], 'w').write(s)
PY
[ -f $C/zT2.bi4 ] || (cd $C && ../../bin/linux/GenCase_linux64 T2 zT2 > "$OUT/gencase.log" 2>&1) \
  || { echo "GenCase failed: $OUT/gencase.log"; exit 1; }
echo "case generated at $((SECONDS-t0)) s"
fi
declare -A ROW
FINE=$(python3 -c "print(1 if $GDT < 0.002 else 0)")   # gauges fine enough for the figures
# The figures of code $1's gauge file $2 against the experiment, the file kept in OUT.
figures() {
  [ "$FINE" = 1 ] && [ -f "$2" ] || return 0
  cp "$2" "$OUT/gauges_$1_$b.csv"
  python3 "$here/spheric_test2_compare.py" "$OUT/gauges_$1_$b.csv" | sed "s/^/$1 $b: /"
}
# The peer's run for boundary $b and its figures; its row in ROW. Fails when out of time.
peer_run() {
  local left=$(left); [ $left -lt 30 ] && { echo "no time left for $b"; return 1; }
  rm -rf /tmp/dsph-t2-$b
  (cd $C && timeout $left $X -name zT2 -dirout /tmp/dsph-t2-$b -dirdataout data -gpu -svres -verlet -$b \
     -ddt:3 -cellmode:h -sv:none -tmax:$T > "$OUT/dsph_$b.log" 2>&1) || {
    echo "DualSPHysics $b failed or ran out of time: $OUT/dsph_$b.log (its last DtMin warning: $(grep -o '[0-9]* DTs adjusted to DtMin (t:[0-9.]*' "$OUT/dsph_$b.log" | tail -1 | sed 's/(t:/by t = /'))"
    (cd /tmp/dsph-t2-$b && tar czf "$OUT/dsph_${b}_gauges_raw.tgz" Gauges*.csv 2>/dev/null); return 0; }
  ROW[dsph_$b]=$(python3 - /tmp/dsph-t2-$b "$OUT/dsph_$b.log" $B0 <<'PY'
import csv, re, sys
d, log, b0 = sys.argv[1], open(sys.argv[2]).read(), float(sys.argv[3])
h, v = list(csv.reader(open(f"{d}/Run.csv"), delimiter=';'))[:2]
r = dict(zip(h, v)); np, steps, secs = int(r['Np']), int(r['Steps']), float(r['TSimul'])
scale = float(re.search(r"CteB=([0-9.eE+-]+)", log).group(1)) / b0
rd = lambda f: [[float(x) for x in row] for row in list(csv.reader(open(f), delimiter=';'))[1:] if row]
p = rd(f"{d}/GaugesVel_P1.csv"); hs = [rd(f"{d}/GaugesSWL_H{k}.csv") for k in range(1, 5)]
with open(f"{d}/gauges.csv", "w") as o:   # surge's gauges.csv form: heights over the peer's floor
    o.write(f"# label: DualSPHysics 5.0, {d.rsplit('-', 1)[1]} (its case)\ntime,P1,H1,H2,H3,H4\n")
    for k, row in enumerate(p):
        o.write(f"{row[0]},{scale * row[1] / row[2] if row[2] > 0 else 0.0}," + ",".join(f"{g[k][3] - 0.003}" for g in hs) + "\n")
print(f"{np} {steps} {1000 * secs / steps:.3f} {np * steps / secs:.3e} {int(r['MemGpu']) // np}")
PY
)
  echo "DualSPHysics $b: ${ROW[dsph_$b]} (particles steps ms/step particle-steps/s bytes/p) at $((SECONDS-t0)) s"
  echo "DualSPHysics $b: $(grep -o 'DTs adjusted to DtMin\.*: [0-9]*' "$OUT/dsph_$b.log" | tail -1 | sed 's/\.*:/:/')"
  figures dsph /tmp/dsph-t2-$b/gauges.csv   # its figures, whatever surge does
}
for b in ${BOUNDS:-mdbc dbc}; do
  if has dsph; then peer_run || break; fi
  has surge || continue
  left=$(left); [ $left -lt 30 ] && { echo "no time left for surge $b"; break; }
  if [ "${SURGE_PHYSICS:-peer}" = shipped ]; then   # configs/spheric_test2.toml's physics
    vis='{kind="artificial",alpha=0.1}'; bnd='{kind="mdbc",slip=true}'
  else vis='{kind="artificial",alpha=0.1,boundary_factor=0.2}'; bnd='{kind="mdbc",slip="wall"}'; fi
  [ $b = dbc ] && bnd='{kind="dbc"}'
  rm -rf /tmp/surge-t2-$b
  timeout $left "$S" run "$root/configs/dam_break_3d.toml" --backend cuda --out /tmp/surge-t2-$b --quiet --set dp=0.006 \
    --set physics.eos.c0_coef=20 --set "physics.viscosity=$vis" \
    --set 'physics.density_diffusion={kind="fourtakas",delta=0.1}' --set "physics.boundary=$bnd" \
    --set time.end=$T --set output.interval=$T --set output.gauge_interval=$GDT "${top[@]}" > "$OUT/surge_$b.log" 2>&1
  ok=$?
  figures surge /tmp/surge-t2-$b/gauges.csv   # its gauges so far, if it ran out of time
  [ $ok = 0 ] || { echo "surge $b failed or ran out of time: $OUT/surge_$b.log"; continue; }
  ROW[surge_$b]=$(python3 -c "
import json; d = json.load(open('/tmp/surge-t2-$b/summary.json'))
print(d['particles'], d['steps'], f\"{1000 * d['wall_seconds'] / d['steps']:.3f}\", f\"{d['particles'] * d['steps'] / d['wall_seconds']:.3e}\", d['bytes_per_particle'])")
  echo "surge $b: ${ROW[surge_$b]} at $((SECONDS-t0)) s"
done
echo
echo "SPHERIC Test 2, dp 0.006, t = 0 -> $T s, one GPU, whole run (gauges every $GDT s)"
printf "%-22s %10s %8s %9s %14s %8s\n" code particles steps ms/step particle-st/s bytes/p
for b in ${BOUNDS:-mdbc dbc}; do for c in dsph surge; do
  [ -n "${ROW[${c}_$b]:-}" ] && printf "%-22s %10s %8s %9s %14s %8s\n" "$([ $c = dsph ] && echo DualSPHysics-5.0 || echo surge) $b" ${ROW[${c}_$b]}
done; done
echo "(done in $((SECONDS-t0)) s)"
