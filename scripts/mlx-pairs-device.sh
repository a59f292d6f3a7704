#!/usr/bin/env bash
# MLX 0.32.2's 26-shape cycle at its cache 128, natively and through the cuFFT interposer, in
# N alternated pairs of processes (which one goes first alternates), every process pinned to
# the same cores. One process's figure is its median over 600 cycles; the spread between
# processes (a fast and a slow state, docs/history/2026-12.md) is larger than the 3% target, so the target
# needs many pairs. On the device, repository root, .device/bench carried and MLX's parts in
# /tmp/mlxparts (see scripts/gpu-bench-device.sh):
#   OUT=/tmp/m3 PAIRS=40 bash scripts/mlx-pairs-device.sh; python3 scripts/mlx-pair-stats.py /tmp/m3
#   DEADLINE_S: no pair starts after this many seconds (the device's per-call limit).
#   CPUS: the cores every process is pinned to (taskset list, default 4-11), or `percore`:
#     8 CPUs of 8 distinct physical cores (no two hyperthread siblings), from 4 up.
#   HFP_OLD_LIB: another build of the interposer (an absolute path): one more arm, `old`.
#   HFP_FWD=1: two more arms from scripts/probes/forward_preload.c (built here with gcc):
#     `fwd`, MLX through a preload that only forwards and counts its three per-transform calls
#     (what any interposer's hop costs, against which the pool's own path is measured), and
#     `empty`, the same library defining none of them (what being preloaded costs).
#   With more arms than native and `pool`, each round runs every arm once, in an order that
#   rotates by one each round.
#   HFP_HOST_PROFILE=1: the interposed processes run with HIPFFT_POOL_HOST_PROFILE=1 (the
#     interposer's own time per export, in their metrics JSON; mlx-pair-stats.py prints it).
#   Each process's JSON lists its threads (CPU last run on, CPU time, switches);
#   topology.txt has the machine's sibling lists.
set -u
b=$(cd "${HFP_BENCH_DIR:-.device/bench}" && pwd)
out=${OUT:?OUT: where the results go}
mkdir -p "$out"
for c in /sys/devices/system/cpu/cpu[0-9]*; do
  printf '%s siblings %s\n' "${c##*/}" "$(cat "$c/topology/thread_siblings_list" 2>/dev/null)"
done | sort -V > "$out/topology.txt"
cpus=${CPUS:-4-11}
if [ "$cpus" = percore ]; then
  # The first CPU of each physical core, from CPU 4 on, eight of them.
  cpus=$(python3 - <<'PY'
import glob, re
seen, pick = set(), []
for p in sorted(glob.glob("/sys/devices/system/cpu/cpu[0-9]*"), key=lambda p: int(re.sub(r"\D", "", p.rsplit("/", 1)[1]))):
    cpu = int(p.rsplit("cpu", 1)[1])
    try:
        sib = open(p + "/topology/thread_siblings_list").read().strip()
    except OSError:
        continue
    if cpu >= 4 and sib not in seen:
        seen.add(sib); pick.append(cpu)
print(",".join(map(str, pick[:8])))
PY
)
  [ -n "$cpus" ] || cpus=4-11
fi
echo "cpus $cpus" >> "$out/topology.txt"
# shellcheck disable=SC1091
PARTS_DIR=${HFP_MLX_PARTS:-/tmp/mlxparts} source "$b/mlx-on-device.sh" > "$out/env.txt" 2>&1
one() {
  local who=$1 i=$2 pre=()
  local lib=$b/lib/libhipfft_pool_cufft.so
  [ "$who" = old ] && lib=$HFP_OLD_LIB
  case $who in
    native) ;;
    fwd | empty) pre=(LD_PRELOAD="$out/$who.so" FORWARD_COUNTS_OUT="$out/$who-$i.counts.json") ;;
    *) pre=(LD_PRELOAD="$lib" HIPFFT_POOL_LIVE_CEILING=128 HIPFFT_POOL_CAPACITY=128 HIPFFT_POOL_METRICS_OUT="$out/$who-$i.metrics.json"
      HIPFFT_POOL_HOST_PROFILE="${HFP_HOST_PROFILE:-0}") ;;
  esac
  env MLX_CUDA_FFT_CACHE_SIZE=128 "${pre[@]}" timeout 60 taskset -c "$cpus" python3 "$b/mlx_cycle_bench.py" \
    --shapes "$b/probe-shapes.json" --cycles 600 --warmup 40 --json "$out/$who-$i.json" > "$out/$who-$i.txt" 2>&1
  echo "$who $i rc=$? $(python3 -c "import json;print(json.load(open('$out/$who-$i.json'))['us_per_call_median'])" 2>/dev/null)"
}
arms=(native pool)
[ -n "${HFP_OLD_LIB:-}" ] && arms+=(old)
if [ "${HFP_FWD:-0}" = 1 ]; then
  src=$(dirname "$0")/probes/forward_preload.c
  { gcc -O2 -shared -fPIC -o "$out/fwd.so" "$src" -ldl && gcc -O2 -shared -fPIC -DFORWARD_NOTHING -o "$out/empty.so" "$src" -ldl; } ||
    { echo "HFP_FWD: gcc failed" >&2; exit 1; }
  arms+=(fwd empty)
fi
for i in $(seq 1 "${PAIRS:-40}"); do
  [ "$SECONDS" -lt "${DEADLINE_S:-100000}" ] || { echo "deadline: stopped before pair $i"; break; }
  n=${#arms[@]}
  for k in $(seq 0 $((n - 1))); do one "${arms[$(((i - 1 + k) % n))]}" "$i"; done
done > "$out/pairs.txt"
cat "$out/pairs.txt"
