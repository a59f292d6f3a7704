#!/usr/bin/env bash
# On the device machine: MLX's CUDA encoder without MLX (scripts/probes/mlx_encoder_pattern.c:
# lone captured kernels copied into each buffer's graph, kept instantiations updated in place,
# a plan cache of 8) through the interposer, which follows the graphs that hold each captured
# plan, at several ceilings; the probe built against the shared CUDA runtime (gcc) and against
# the static one (nvcc's default, as libmlx links it). Every value must be right, or the probe
# must stop on a cuFFT error (the interposer's clear refusal), never on wrong values (exit 3)
# or a CUDA fault.
#   scripts/probes/graphs-device.sh LIB        LIB: libhipfft_pool_cufft.so
# Writes $OUT/graphs.txt.
set -uo pipefail
lib=$(realpath "${1:?usage: graphs-device.sh LIB}")
out=${OUT:-/tmp/graphs-out}; mkdir -p "$out"; log=$out/graphs.txt
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
gcc -O2 -o /tmp/mep-shared scripts/probes/mlx_encoder_pattern.c -I/usr/local/cuda/include \
  -L/usr/local/cuda/lib64 -lcufft -lcudart -lcuda -lpthread -lm || exit 1
nvcc -O2 -o /tmp/mep-static scripts/probes/mlx_encoder_pattern.c -lcufft -lcuda -lpthread -lm 2>&1 | grep -v warning | head -5
for b in shared static; do
  echo "== $b runtime: $(ldd /tmp/mep-$b | grep -c libcudart) libcudart NEEDED" >>"$log"
done
# one NAME CEILING RESIDENTS PROBE-ARGS...
one() {
  local name=$1 ceiling=$2 residents=$3; shift 3
  rm -f /tmp/m.json
  env LD_PRELOAD="$lib" HIPFFT_POOL_LIVE_CEILING="$ceiling" HIPFFT_POOL_CAPTURE_RESIDENTS="$residents" \
    HIPFFT_POOL_METRICS_OUT=/tmp/m.json timeout 120 "$@" >/tmp/v.out 2>/tmp/v.err
  local rc=$?
  echo "== $name: ceiling $ceiling residents $residents: exit $rc $(grep -hE '^RESULT' /tmp/v.out | head -1)" >>"$log"
  grep -hE 'FAIL|interposer' /tmp/v.out /tmp/v.err | sort | uniq -c | sort -rn | head -3 | cut -c1-400 >>"$log"
  python3 -c "import json; m=json.load(open('/tmp/m.json')); print({k:m.get(k) for k in ('peak_live','creations','destroys','captured_execs','captured_followed','captured_kept','capture_residents','graph_held_plans','graphs_holding_plans','instantiations_holding_plans','standing','capture_misses','failures')})" >>"$log" 2>&1
}
for c in 4 12 26; do
  one "static cache 8" "$c" 0 /tmp/mep-static --cache 8 --extract 1 --update 1 --buffers 100 --ops 8
done
one "static cache 8, child graphs" 12 0 /tmp/mep-static --cache 8 --extract 0 --update 1 --buffers 100 --ops 8
one "static cache 8, default residents" 12 3 /tmp/mep-static --cache 8 --extract 1 --update 1 --buffers 100 --ops 8
one "shared cache 8" 12 0 /tmp/mep-shared --cache 8 --extract 1 --update 1 --buffers 100 --ops 8
echo "== natively, cache 8 (dies natively: the plan cache destroys plans kept instantiations hold)" >>"$log"
timeout 120 /tmp/mep-static --cache 8 --extract 1 --update 1 --buffers 100 --ops 8 >/tmp/n.out 2>&1; echo "exit $? $(grep RESULT /tmp/n.out | head -1)" >>"$log"
cat "$log"
