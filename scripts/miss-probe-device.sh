#!/usr/bin/env bash
# Whether a pool miss's extra time inside cuFFT's calls on its worker is glibc's per-thread
# malloc arenas (MALLOC_ARENA_MAX=1 puts every thread on the main arena) or the core the
# worker wakes on (every thread pinned to one core, then to two). Runs a short gpu_bench
# (plan creation before and after the other parts, and the thread structures) under each,
# twice, and prints one line per creation part. Written after the miss-anatomy run (docs/history/2026-12.md);
# first run 2026-12-06 (docs/runs/2026-12-06-miss-probe-fb0ce29/): neither the arenas nor the
# core explain it, the pool's create alone costs more than raw destroy + create even with
# every thread on one core. Added then: every hand-off parking (HIPFFT_POOL_POLL_US=0),
# on all cores and on one, to tell whether a polling waiter slows the worker's calls.
#
#   on the device, repository root, .device/bench carried (scripts/gpu-bench.sh stages it):
#   OUT=/tmp/mp [ROUNDS=2] bash scripts/miss-probe-device.sh   # then tar $OUT (at most 8 files come back)
b=${HFP_BENCH_DIR:-.device/bench}
a="--cycles 100 --miss-cycles 5 --rounds 4 --warmup 5 --busy-ms 0 --busy-rounds 1 --no-hip --create-reps 20"
tm=(); [ -x /usr/bin/time ] && tm=(/usr/bin/time -f "%e s, %R minor faults, %F major")
one() { local name=$1 pin=$2; shift 2
  env "$@" LD_LIBRARY_PATH=/usr/local/cuda/lib64 taskset -c $pin "${tm[@]}" $b/gpu_bench $a --json $OUT/mp-$name.json > $OUT/mp-$name.txt 2> $OUT/mp-$name.err
  python3 - $OUT/mp-$name.json "$name" "$(tail -1 $OUT/mp-$name.err)" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for c in d["creation"]:
    print(f"{sys.argv[2]:>8} {c['runtime']:<30} raw {c['mean_raw_us']:6.1f} (create {c['mean_raw_create_only_us']:6.1f}) two-threads in calls {c['mean_raw_two_threads_in_calls_us']:6.1f} pool {c['mean_pool_us']:6.1f} in calls {c['pool_in_runtime_us_per_miss']:6.1f} -> {c['mean_pool_us']/c['mean_raw_us']:.3f}x")
st = d.get("creation_thread_structures") or {}
for s in st.get("structures", []):
    print(f"    {s['structure']:<52} {s['mean_us']:6.1f} in calls {s['mean_in_calls_us']:6.1f}")
print("  ", sys.argv[3])
PY
}
for i in $(seq 1 "${ROUNDS:-2}"); do
  one default 0-15 X=1
  one arena1 0-15 MALLOC_ARENA_MAX=1
  one pin1 5 X=1
  one pin2 5,6 X=1
  one poll0 0-15 HIPFFT_POOL_POLL_US=0
  one pin1poll0 5 HIPFFT_POOL_POLL_US=0
done
