#!/usr/bin/env bash
# Stages what the miss probe and the MLX pairs need, small enough (about 9 MiB) to travel in
# one device call beside one of MLX's two wheel parts (36 MiB), so that both run in two
# consecutive calls on one warm machine:
#   call 1, carry .device/slim and .device/mlx/mlx.part.aa: copy the part to /tmp/mlxparts/ and
#     .device/slim to /tmp/slim; OUT=/tmp/mp HFP_BENCH_DIR=.device/slim bash scripts/miss-probe-device.sh
#   call 2 (within the machine's 30 s), carry .device/mlx/mlx.part.ab: copy it to /tmp/mlxparts/;
#     OUT=/tmp/m4 PAIRS=40 DEADLINE_S=480 HFP_BENCH_DIR=/tmp/slim bash scripts/mlx-pairs-device.sh
# The same folder serves scripts/miss-anatomy-device.sh (OUT=/tmp/an bash
# scripts/miss-anatomy-device.sh /tmp/slim).
# OLD_LIB=PATH also stages another build of the cuFFT interposer as lib-old/ (for
# mlx-pairs-device.sh's HFP_OLD_LIB=/tmp/slim/lib-old/libhipfft_pool_cufft.so).
# MLX_ONLY=1 leaves out gpu_bench and miss_anatomy (about 10 MiB): with lib-old, the full
# folder and a wheel part came over the device's carry limit, which counts the working tree
# too (docs/runs/2026-12-07-device-cf94200-mlx/README.md).
# MLX's parts come from ../shared/tools/stage-mlx.sh (scripts/gpu-bench.sh runs it too).
set -euo pipefail
cd "$(dirname "$0")/.."
bins=()
[ "${MLX_ONLY:-0}" = 1 ] || bins=(gpu_bench miss_anatomy)
[ ${#bins[@]} -eq 0 ] || cargo build --release --features cuda --example gpu_bench --example miss_anatomy
cargo build --release -p hipfft-pool-cufft
dest=.device/slim
rm -rf "$dest" && mkdir -p "$dest/lib"
for b in "${bins[@]}"; do cp "target/release/examples/$b" "$dest/"; done
cp target/release/libhipfft_pool_cufft.so "$dest/lib/"
if [ -n "${OLD_LIB:-}" ]; then
  mkdir -p "$dest/lib-old" && cp "$OLD_LIB" "$dest/lib-old/libhipfft_pool_cufft.so"
fi
strip --strip-debug "${bins[@]/#/$dest/}" "$dest"/lib*/libhipfft_pool_cufft.so 2>/dev/null || true
cp scripts/frameworks/mlx_cycle_bench.py data/probe-shapes.json ../shared/tools/mlx-on-device.sh "$dest/"
dirty=$(git status --porcelain --untracked-files=no | grep -q . && echo "+dirty" || true)
echo "$(git rev-parse --short HEAD)${dirty}" > "$dest/COMMIT"
[ -f .device/mlx/mlx.part.aa ] || bash ../shared/tools/stage-mlx.sh .device/mlx >&2 ||
  echo "stage-slim: warning: MLX's wheels could not be packed: no MLX pairs on the device" >&2
du -sh "$dest" .device/mlx/* >&2
