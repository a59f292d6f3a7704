#!/usr/bin/env bash
# The cost of the C ABI's lease checks (HIPFFT_POOL_DEBUG_CHECKS=1) on the hit path:
# builds benches/c/lease_check_cost.c against the release libhipfft_pool.so and runs it
# without and with the checks, several times each, interleaved. Usage:
#   scripts/lease-check-cost.sh [PAIRS] [ROUNDS] [REPEATS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release -p hipfft-pool >/dev/null 2>&1
out=$(mktemp -d)
cc -std=c11 -O2 -Iinclude benches/c/lease_check_cost.c -o "$out/lease_check_cost" \
  -Ltarget/release -lhipfft_pool -Wl,-rpath,"$root/target/release"
echo "commit $(git rev-parse --short HEAD), $(nproc) cores, $(uname -m)"
for i in $(seq "${3:-3}"); do
  env -u HIPFFT_POOL_DEBUG_CHECKS "$out/lease_check_cost" "${1:-1000000}" "${2:-7}"
  HIPFFT_POOL_DEBUG_CHECKS=1 "$out/lease_check_cost" "${1:-1000000}" "${2:-7}"
done
