#!/usr/bin/env bash
# Builds here what the GPU check needs and lays it out in .device/gpu/ (ignored by git via
# .git/info/exclude), for the device machine: the test binaries with the `cuda` feature, the
# CLI, and hip-shim built over CUDA under both hipFFT names.
#   scripts/gpu-check.sh            # build and stage
# Then on the device machine (the `device` tool, carry .device):
#   bash .device/gpu/run.sh         # writes $OUT/gpu-check.log
set -euo pipefail
cd "$(dirname "$0")/.."
out=.device/gpu
rm -rf "$out"; mkdir -p "$out"
cargo build --release -p hipfft-pool-cli --features cuda
cargo build --release -p hip-shim --features cuda
msgs=$(cargo test --release -p hipfft-pool-cli --features cuda --no-run --message-format=json --test gpu 2>/dev/null
      cargo test --release -p hipfft-pool --features cuda --no-run --message-format=json --test cuda_gpu 2>/dev/null)
for t in gpu cuda_gpu; do
  exe=$(echo "$msgs" | python3 -c "import sys,json
for l in sys.stdin:
    try: m=json.loads(l)
    except Exception: continue
    if m.get('reason')=='compiler-artifact' and m['target']['name']=='$t' and m.get('executable'): print(m['executable'])" | tail -1)
  cp "$exe" "$out/$t-test"
done
cp target/release/hipfft-pool "$out/"
cp target/release/libhip_shim.so "$out/"
ln -sf libhip_shim.so "$out/libhipfft.so"
ln -sf libhip_shim.so "$out/libamdhip64.so"
for f in "$out"/*-test "$out"/hipfft-pool "$out"/libhip_shim.so; do strip --strip-debug "$f"; done
cp scripts/gpu-check-device.sh "$out/run.sh"
du -sh "$out"
