#!/usr/bin/env bash
# Which part of the interposer's `auto` capture breaks the encoder probe at ceiling 12 when
# `release-on-run` does not (docs/history/2026-12.md). On the device machine, from the
# repository root, with LIB (the interposer, e.g. .dev-intercept/lib/libhipfft_pool_cufft.so)
# carried:  scripts/probes/encoder-bisect-device.sh LIB
# Writes $OUT/bisect.txt: per variant its RESULT, the last successful updates, and the pool's counts.
set -uo pipefail
lib=$(realpath "${1:?usage: encoder-bisect-device.sh LIB}")
out=${OUT:-/tmp/bisect-out}; mkdir -p "$out"; log=$out/bisect.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
gcc -O2 -o /tmp/mep scripts/probes/mlx_encoder_pattern.c -I/usr/local/cuda/include \
  -L/usr/local/cuda/lib64 -lcufft -lcudart -lcuda -lpthread -lm || exit 1
# variant NAME CEILING CAPACITY [VAR=VALUE...] -- PROBE ARGS...: through the interposer
variant() {
  local name=$1 ceiling=$2 capacity=$3; shift 3
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  echo "== $name: ceiling $ceiling capacity $capacity ${envs[*]} -- $*" >>"$log"
  env LD_PRELOAD="$lib" HIPFFT_POOL_LIVE_CEILING="$ceiling" HIPFFT_POOL_CAPACITY="$capacity" \
    HIPFFT_POOL_METRICS_OUT=/tmp/m.json "${envs[@]}" timeout 60 /tmp/mep --buffers 200 --ops 8 --trace 1 "$@" \
    >/tmp/v.out 2>/tmp/v.err
  echo "exit $?" >>"$log"
  grep -hE '^(RESULT|DETAIL|FAIL)' /tmp/v.out /tmp/v.err | head -4 >>"$log"
  echo "successful updates: $(grep -c 'update ok' /tmp/v.err); last: $(grep 'update ok' /tmp/v.err | tail -2 | tr '\n' ' ')" >>"$log"
  python3 -c "import json; m=json.load(open('/tmp/m.json')); print({k:m.get(k) for k in ('peak_live','creations','destroys','captured_execs','captured_released','capture_residents','captured_on_residents','capture_misses','failures')})" >>"$log" 2>&1
  rm -f /tmp/m.json
}
if [ -n "${ONLY_NO_RESIDENTS:-}" ]; then
  for i in 1 2; do variant "no-residents-$i" 12 12 HIPFFT_POOL_CAPTURE_RESIDENTS=0 -- --cache 8; done
  cat "$log"; exit 0
fi
for i in 1 2; do
  variant "auto-$i" 12 12 -- --cache 8
  variant "no-residents-$i" 12 12 HIPFFT_POOL_CAPTURE_RESIDENTS=0 -- --cache 8
done
variant auto-own-host-node 12 12 -- --cache 8 --extra-node 3
variant auto-no-update 12 12 -- --cache 8 --update 0
variant auto-child-graphs 12 12 -- --cache 8 --extract 0
variant auto-all-resident 128 12 -- --cache 8
variant pin-all-resident 128 12 HIPFFT_POOL_CAPTURE=pin -- --cache 8
variant auto-after-graph 12 12 HIPFFT_POOL_CAPTURE_RELEASE=after-graph -- --cache 8
variant release-on-run 12 12 HIPFFT_POOL_CAPTURE=release-on-run -- --cache 8
echo "== native mlx way, a second plan of every shape kept" >>"$log"
timeout 60 /tmp/mep --buffers 200 --ops 8 --cache 8 --keep-one 1 >/tmp/v.out 2>&1; echo "exit $?" >>"$log"
grep -hE '^(RESULT|DETAIL|FAIL)' /tmp/v.out | head -3 >>"$log"
cat "$log"
