#!/usr/bin/env bash
# MLX's cycle natively, through the pool's interposer and through a forward-only preload, in
# rotating rounds; then, where the machine has perf, one profiled process of each arm.
# Usage (repository root on the device, .device/mlxrun carried, MLX's parts in /tmp/mlxparts):
#   bash .device/mlxrun/decompose.sh OUT ROUNDS DEADLINE_S
set -u
out=$1; rounds=$2; deadline=$3
mkdir -p "$out"
{ which perf; cat /proc/sys/kernel/perf_event_paranoid; nproc; lscpu | grep -i "model name"; } > "$out/machine.txt" 2>&1
HFP_BENCH_DIR=$PWD/.device/mlxrun OUT=$out/m PAIRS=$rounds DEADLINE_S=$deadline HFP_FWD=1 bash scripts/mlx-pairs-device.sh > "$out/pairs-stdout.txt" 2>&1
python3 scripts/mlx-pair-stats.py "$out/m" > "$out/stats.txt" 2>&1
cat "$out/stats.txt"
if command -v perf > /dev/null; then
  b=$PWD/.device/mlxrun
  PARTS_DIR=/tmp/mlxparts source "$b/mlx-on-device.sh" > /dev/null 2>&1
  for who in native pool; do
    pre=()
    [ "$who" = pool ] && pre=(LD_PRELOAD="$b/lib/libhipfft_pool_cufft.so" HIPFFT_POOL_LIVE_CEILING=128 HIPFFT_POOL_CAPACITY=128)
    env MLX_CUDA_FFT_CACHE_SIZE=128 "${pre[@]}" timeout 120 taskset -c 4-11 perf record -F 15000 -o "$out/perf-$who.data" \
      python3 "$b/mlx_cycle_bench.py" --shapes "$b/probe-shapes.json" --cycles 1500 --warmup 40 --json "$out/perf-$who.json" > "$out/perf-$who.txt" 2>&1
    perf report -i "$out/perf-$who.data" --no-children --sort dso --stdio 2>/dev/null | head -40 > "$out/perf-$who-dso.txt"
    perf report -i "$out/perf-$who.data" --no-children --sort dso,sym --stdio 2>/dev/null | grep -v "^$" | head -120 > "$out/perf-$who-sym.txt"
    rm -f "$out/perf-$who.data"
  done
fi
