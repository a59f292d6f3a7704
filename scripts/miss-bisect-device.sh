#!/usr/bin/env bash
# Why a pool miss costs more in gpu_bench's creation part than in miss_anatomy: both
# harnesses in one process each, miss_anatomy with one of gpu_bench's conditions at a time
# (no pause between structures, gpu_bench's stream and buffers, the pool over the bare
# runtime), gpu_bench's creation part alone with and without miss_anatomy's pause, ROUNDS
# times in turn. Usage (on the device, binaries from scripts/stage-slim.sh):
#   OUT=/tmp/mb ROUNDS=2 bash scripts/miss-bisect-device.sh DIR
# Prints one line per run: the harness, its knobs, raw (inline) and pool us per miss.
set -uo pipefail
dir=${1:?usage: miss-bisect-device.sh DIR}
out=${OUT:-/tmp/miss-bisect}
reps=${REPS:-30}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cat "$dir/COMMIT" > "$out/commit.txt" 2>/dev/null
{ date -u +"date: %F %T UTC"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > "$out/machine.txt" 2>&1
# A second build beside the first (miss_anatomy_NEW and gpu_bench_NEW, NEW=swap say) runs
# too, each of its runs right after the first build's: NEW=swap bash ... DIR
new=${NEW:-}
anatomy() { # name, knobs...
  local name=$1; shift
  "$dir/miss_anatomy${bin:-}" --reps "$reps" --json "$out/$name.json" "$@" > "$out/$name.txt" 2>&1
  python3 - "$out/$name.json" "$name" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = {r["structure"]: r for r in d["structures"]}
i, p = s["inline"]["total_us"], s["pool"]["total_us"]
print(f"{sys.argv[2]:<34} inline {i:7.1f} one-job {s['one-job']['total_us']:7.1f} two-jobs {s['two-jobs']['total_us']:7.1f} pool {p:7.1f} -> {p/i:.3f}x (pool outside calls {s['pool']['outside_calls_us'] or float('nan'):.1f})")
PY
}
bench() { # name, knobs...
  local name=$1; shift
  "$dir/gpu_bench${bin:-}" --creation-only --no-hip --create-reps "$reps" --json "$out/$name.json" "$@" > "$out/$name.txt" 2>&1
  python3 - "$out/$name.json" "$name" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["creation"][0]
print(f"{sys.argv[2]:<34} raw {c['mean_raw_us']:7.1f} two-threads {c['mean_raw_two_threads_us']:7.1f} pool {c['mean_pool_us']:7.1f} -> {c['mean_pool_us']/c['mean_raw_us']:.3f}x")
PY
}
both() { # anatomy|bench, name, knobs...
  local f=$1 name=$2; shift 2
  bin= $f "$name" "$@"
  [ -n "$new" ] && [ -x "$dir/miss_anatomy_$new" ] && bin=_$new $f "$name-$new" "$@"
  return 0
}
for r in $(seq 1 "${ROUNDS:-2}"); do
  both anatomy "anatomy-$r"
  both anatomy "anatomy-gap0-$r" --gap-ms 0
  both anatomy "anatomy-benchenv-$r" --bench-env
  both anatomy "anatomy-untimed-$r" --pool-untimed
  both anatomy "anatomy-all-$r" --gap-ms 0 --bench-env --pool-untimed
  both bench "bench-$r"
  both bench "bench-gap3-$r" --create-gap-ms 3
done 2>&1 | tee "$out/summary.txt"
