#!/usr/bin/env bash
# Plan creation, two builds side by side on the device machine: gpu_bench's creation part
# (raw destroy + create against a pool miss at capacity 1, and the thread structures)
# from build A and build B, alternated A B A B, so that the machine's drift between runs
# (it moved raw creation by 30% between two runs of one build) falls on both alike.
#
#   scripts/creation-ab-device.sh DIR_A DIR_B OUT
#
# DIR_A and DIR_B each hold a `gpu_bench` (a `--features cuda` build of the example) and a
# COMMIT file. Prints one line per run and writes each run's output to OUT.
set -euo pipefail
a=$1 b=$2 out=$3
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for round in 1 2; do
  for side in a b; do
    dir=${!side}
    commit=$(cat "$dir/COMMIT")
    f="$out/creation-$side-$commit-$round.txt"
    "$dir/gpu_bench" --no-hip --cycles 300 --busy-ms 0 --busy-rounds 1 --create-reps 30 > "$f" 2>&1
    echo "$side $commit round $round: $(grep -m1 'mean of medians' "$f")"
  done
done
