#!/usr/bin/env bash
# The hand-off workload at a full ceiling against the same with room to spare: 16 threads
# pass 6 handles of distinct shapes among them (one thread at a time per handle), each
# execution checked, under the cuFFT interposer on the simulated runtime. Runs ceilings 4
# and 64 alternately REPEATS times (default 9) and prints each one's median, min and max
# wall time and the ratio of the medians; fails if any execution failed or was wrong.
#
#   scripts/bench-handoff.sh [REPEATS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-9}
rounds=${2:-256}
cargo build --release -q -p hipfft-pool-cufft
lib=$PWD/target/release
exe=$(mktemp -d)/process_life
"${CC:-cc}" -O2 -std=gnu11 -o "$exe" intercept/tests/c/process_life.c -Iintercept/tests/c \
  -L"$lib" -Wl,-rpath,"$lib" -Wl,--disable-new-dtags -lhipfft_pool_cufft -lm -lpthread -ldl
declare -A times
for ((i = 0; i < repeats; i++)); do
  for ceiling in 4 64; do
    line=$(HIPFFT_POOL_RUNTIME=sim HIPFFT_POOL_LIVE_CEILING=$ceiling "$exe" handoff 16 6 "$rounds" 2>/dev/null | grep '^handoff:') || {
      echo "handoff at ceiling $ceiling failed"; exit 1; }
    echo "ceiling $ceiling: $line"
    times[$ceiling]+="$(sed -E 's/.* ([0-9.]+) ms$/\1/' <<<"$line") "
  done
done
python3 - "${times[4]}" "${times[64]}" <<'PY'
import statistics, sys
a, b = ([float(x) for x in s.split()] for s in sys.argv[1:3])
for name, t in (("ceiling 4", a), ("ceiling 64", b)):
    print(f"{name}: median {statistics.median(t):.1f} ms, min {min(t):.1f}, max {max(t):.1f} ({len(t)} runs)")
r = statistics.median(a) / statistics.median(b)
print(f"ratio of medians (4 / 64): {r:.2f} ({'within' if r <= 2 else 'NOT within'} 2x)")
PY
