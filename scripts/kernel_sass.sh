#!/usr/bin/env bash
# The force kernel's machine code for a case, on a machine without a GPU: NVRTC's PTX
# (crates/surge-cuda/examples/kernel_ptx.rs), assembled for sm_90 (H100) by ptxas, read back
# by cuobjdump; prints ptxas' registers and spills, and the instructions of the candidate loop
# (from the test against the support to the loop's back edge: a miss path and the pair body
# together). ptxas, cuobjdump and nvdisasm come from NVIDIA's pip wheels, fetched once into
# $SURGE_CACHE_DIR (or ~/.cache/surge)/cuda-tools.
#
#   scripts/kernel_sass.sh CONFIG OUT_PREFIX [KEY=VALUE ...]     e.g.
#   scripts/kernel_sass.sh configs/dam_break_3d.toml /tmp/db dp=0.006
#
# Writes OUT_PREFIX.ptx, .cubin and .sass (the force kernel).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n 2,12p "$0"; exit 2; }
cfg=$1; out=$2; shift 2
tools=${SURGE_CACHE_DIR:-$HOME/.cache/surge}/cuda-tools
if [ ! -x "$tools/nvidia/cu13/bin/nvdisasm" ]; then
    mkdir -p "$tools/wheels"
    python3 -m pip download -q --no-deps -d "$tools/wheels" nvidia-cuda-nvcc==13.0.88 nvidia-cuda-cuobjdump \
        nvidia-cuda-nvdisasm
    for w in "$tools"/wheels/*.whl; do python3 -m zipfile -e "$w" "$tools"; done
    chmod +x "$tools"/nvidia/cu13/bin/*
fi
if [ -z "${NVRTC_LIB:-}" ]; then
    NVRTC_LIB=$(python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "lib"))')
fi
export LD_LIBRARY_PATH="$NVRTC_LIB:${LD_LIBRARY_PATH:-}" PATH="$tools/nvidia/cu13/bin:$PATH"
support2=$(SURGE_CACHE_DIR=$(mktemp -d) cargo run --release -q -p surge-cuda --example kernel_ptx -- "$cfg" "$out.ptx" "$@" |
    sed -n 's/^SUPPORT2 //p')
ptxas -arch=sm_90 -v "$out.ptx" -o "$out.cubin" 2>&1 | grep -A2 "'forces_kernel'" | tail -2
cuobjdump -sass -fun forces_kernel "$out.cubin" | grep -E '^\s+/\*[0-9a-f]{4}\*/' |
    sed 's@/\* 0x[0-9a-f]* \*/@@; s/ \+/ /g' > "$out.sass"
python3 - "$out.sass" "$support2" <<'PY'
import re, struct, sys
lines = open(sys.argv[1]).read().splitlines()
f32 = lambda x: struct.unpack('f', struct.pack('f', float(x)))[0]
support2 = f32(sys.argv[2])
addr = lambda s: int(re.search(r'/\*([0-9a-f]{4})\*/', s).group(1), 16)
def tests_support(l):  # r2 against the support's square
    m = re.search(r'FSETP\.GEU\S* P\d, PT, R\d+, ([0-9.e+-]+), PT', l)
    return m is not None and f32(m.group(1)) == support2
for i, l in enumerate(lines):
    if tests_support(l):
        a0 = addr(l)
        for k in range(i + 1, len(lines)):
            m = re.search(r'BRA (0x[0-9a-f]+)', lines[k])
            if m and int(m.group(1), 16) < a0:
                body = lines[i:k + 1]
                print(f"force kernel: {len(lines)} instructions; candidate loop: {len(body)} after the "
                      f"support test ({sum('MUFU' in b for b in body)} MUFU)")
                sys.exit(0)
print("force kernel: the candidate loop was not found")
PY
