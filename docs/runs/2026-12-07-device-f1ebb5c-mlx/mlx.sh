#!/usr/bin/env bash
# The prefetch change on the device: mlx_pattern old (a3a1f72... ae22daf lib: before f1ebb5c's
# prefetch) and new alternated, then MLX triples native / new / old through mlx-pairs-device.sh.
set -u
out=$1; mkdir -p "$out"
for r in 1 2 3; do for v in old new; do .device/old/mlx_pattern_$v 20000 8 | sed "s/^/$v $r: /"; done; done > "$out/mlx_pattern.txt" 2>&1
cat "$out/mlx_pattern.txt"
OUT=$out/pairs PAIRS=${PAIRS:-40} DEADLINE_S=${DEADLINE_S:-420} HFP_OLD_LIB=$PWD/.device/old/libhipfft_pool_cufft_old.so bash scripts/mlx-pairs-device.sh | tail -3
python3 scripts/mlx-pair-stats.py "$out/pairs" 2>&1 | tail -30
