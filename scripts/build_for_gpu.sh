#!/usr/bin/env bash
# Build the release binary and test binaries here and copy them to .device/ (ignored by git)
# for a GPU host that has no Rust toolchain; run scripts/gpu_check.sh there.
# PACK=1 puts them in one xz archive, .device/bins.tar.xz, instead (about 26 MB where the
# binaries are about 144 MB: under a device call's 64 MiB carry); scripts/gpu_check.sh
# unpacks it, and other scripts need `(cd .device && tar xJf bins.tar.xz)` first.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .device
# The MPI build first (its binary is kept as surge-mpi), then the default one.
if cargo build --release --features mpi; then
    cp target/release/surge .device/surge-mpi
fi
cargo build --release
cp target/release/surge .device/
# Every test binary cargo reports ("Executable tests/NAME.rs (target/release/deps/NAME-HASH)"),
# fresh or rebuilt, for the tests the GPU scripts run.
want=" gpu_parity peer_copy physics_channel_flows physics_hydrostatic physics_taylor_green physics_wall_function physics_dam_break physics_loads determinism decomposition devices removal sampling motion wave_flume bodies open "
cargo test --release --workspace --no-run 2>&1 | sed -n 's/^ *Executable tests\/\([a-z_0-9]*\)\.rs (\(.*\))$/\1 \2/p' |
    while read -r name exe; do
        case "$want" in *" $name "*) cp "$exe" ".device/$name" && echo ".device/$name" ;; esac
    done
strip .device/*
# The scaling harness (benches/scaling.rs); there: .device/scaling --surge .device/surge-mpi ...
f=$(cargo bench --features mpi --bench scaling --no-run 2>&1 | grep -o "target/release/deps/scaling-[0-9a-f]*" | head -n 1)
[ -n "$f" ] && cp "$f" .device/scaling && strip .device/scaling && echo .device/scaling
if [ "${PACK:-0}" = 1 ]; then
    (cd .device && files=$(ls | grep -v '^bins\.tar\.xz$' | grep -v '^peer$') &&
        tar cJf bins.tar.xz $files && rm -f $files && ls -l bins.tar.xz)
fi
