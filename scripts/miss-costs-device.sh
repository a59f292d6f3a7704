#!/usr/bin/env bash
# What each create and destroy of a miss costs the thread that makes it (wall, thread CPU,
# page faults, context switches), in both miss harnesses, ROUNDS processes of each in turn:
# a call whose CPU time matches its wall time ran slower; one short of it waited.
# Usage (on the device, binaries from scripts/stage-slim.sh):
#   OUT=/tmp/mc ROUNDS=3 REPS=30 bash scripts/miss-costs-device.sh DIR
# EXTRA_ENV="MALLOC_ARENA_MAX=1" runs every process with that environment too.
set -uo pipefail
dir=${1:?usage: miss-costs-device.sh DIR}
out=${OUT:-/tmp/miss-costs}
reps=${REPS:-30}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cat "$dir/COMMIT" > "$out/commit.txt" 2>/dev/null
{ date -u +"date: %F %T UTC"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
  lscpu; lscpu -e 2>/dev/null; numactl -H 2>/dev/null; echo "tools: $(command -v perf nsys ncu numactl taskset | tr '\n' ' ')"
} > "$out/machine.txt" 2>&1
for r in $(seq 1 "${ROUNDS:-3}"); do
  echo "== round $r: miss_anatomy ${EXTRA_ENV:-}"
  env ${EXTRA_ENV:-} "$dir/miss_anatomy" --reps "$reps" --json "$out/anatomy-$r.json" > "$out/anatomy-$r.txt" 2>&1
  grep -E '^(inline|one-job|two-jobs|pool) |create:|destroy:' "$out/anatomy-$r.txt"
  echo "== round $r: gpu_bench --creation-only --call-costs ${EXTRA_ENV:-}"
  env ${EXTRA_ENV:-} "$dir/gpu_bench" --creation-only --no-hip --create-reps "$reps" --call-costs --json "$out/bench-$r.json" > "$out/bench-$r.txt" 2>&1
  grep -E 'mean of medians|two other threads| (create|destroy) *:' "$out/bench-$r.txt"
  # The same with the pool's part first in each round, and with every thread kept on the
  # first eight CPUs (TASKSET, default 0-7): does the order of the parts, or where the
  # scheduler puts the threads, move the calls' own cost?
  echo "== round $r: gpu_bench --creation-only --call-costs --pool-first ${EXTRA_ENV:-}"
  env ${EXTRA_ENV:-} "$dir/gpu_bench" --creation-only --no-hip --create-reps "$reps" --call-costs --pool-first --json "$out/bench-first-$r.json" > "$out/bench-first-$r.txt" 2>&1
  grep -E 'mean of medians| (create|destroy) *:' "$out/bench-first-$r.txt"
  echo "== round $r: gpu_bench --creation-only --call-costs --no-two-threads ${EXTRA_ENV:-}"
  env ${EXTRA_ENV:-} "$dir/gpu_bench" --creation-only --no-hip --create-reps "$reps" --call-costs --no-two-threads --json "$out/bench-no2-$r.json" > "$out/bench-no2-$r.txt" 2>&1
  grep -E 'mean of medians| (create|destroy) *:' "$out/bench-no2-$r.txt"
  echo "== round $r: taskset -c ${TASKSET:-0-7} gpu_bench --creation-only --call-costs ${EXTRA_ENV:-}"
  env ${EXTRA_ENV:-} taskset -c "${TASKSET:-0-7}" "$dir/gpu_bench" --creation-only --no-hip --create-reps "$reps" --call-costs --json "$out/bench-taskset-$r.json" > "$out/bench-taskset-$r.txt" 2>&1
  grep -E 'mean of medians| (create|destroy) *:' "$out/bench-taskset-$r.txt"
done 2>&1 | tee "$out/summary.txt"
# Cycles and instructions per thread, where the machine has perf and lets it count: a call
# that runs slower at the same instruction count stalls (memory) or runs at a lower clock.
if command -v perf >/dev/null; then
  perf stat --per-thread -e task-clock,cycles,instructions,cache-misses -o "$out/perf-bench.txt" \
    "$dir/gpu_bench" --creation-only --no-hip --create-reps "$reps" --call-costs > "$out/perf-bench-out.txt" 2>&1
  perf stat --per-thread -e task-clock,cycles,instructions,cache-misses -o "$out/perf-anatomy.txt" \
    "$dir/miss_anatomy" --reps "$reps" > "$out/perf-anatomy-out.txt" 2>&1
fi
