#!/usr/bin/env bash
# The interposer under real frameworks on an NVIDIA GPU: MLX 0.32.2's own test_fft.py, a
# faithful subset of PyTorch's test_spectral_ops.py and of CuPy's fft_tests, each natively and
# through libhipfft_pool_cufft.so (LD_PRELOAD), and the 26-shape cycle per call.
#
# Staging (on the build machine, from the repository root; see docs/frameworks.md):
#   scripts/frameworks-device.sh stage DIR      # DIR: a folder .git/info/exclude ignores
# copies the stripped interposer, the runners, MLX's tests and the probe shapes into DIR and
# packs MLX's CUDA wheels into DIR/mlx (../shared/tools/stage-mlx.sh). On the device machine,
# from the repository root, with DIR carried:
#   scripts/frameworks-device.sh torch DIR      # PyTorch and CuPy; also keeps DIR/mlx/mlx.part.aa
#   scripts/frameworks-device.sh mlx DIR        # MLX (needs mlx.part.aa from the call before)
#   scripts/frameworks-device.sh probe DIR      # the encoder probe, natively and interposed (keeps mlx.part.aa)
#   DIAG=resident scripts/frameworks-device.sh diag DIR   # MLX under resident plans (after probe or keep)
# Logs go to $OUT (default /tmp/frameworks-out) as one tarball plus summary.txt.
set -uo pipefail

phase=${1:?usage: frameworks-device.sh stage|torch|mlx DIR}
dir=$(cd "${2:?usage: frameworks-device.sh stage|torch|mlx DIR}" 2>/dev/null && pwd || echo "$2")
root=$(cd "$(dirname "$0")/.." && pwd)

if [ "$phase" = stage ]; then
  set -e
  mkdir -p "$dir/lib" "$dir/run" "$dir/mlxtests"
  cargo build --release -p hipfft-pool-cufft --manifest-path "$root/Cargo.toml"
  cp "$root/target/release/libhipfft_pool_cufft.so" "$dir/lib/"
  strip --strip-debug "$dir/lib/libhipfft_pool_cufft.so"
  cp "$root"/scripts/frameworks/*.py "$root/scripts/torch_cupy_bench.py" "$root/data/probe-shapes.json" "$dir/run/"
  cp "$root/scripts/frameworks-device.sh" "$dir/run/"
  git -C "$root" rev-parse HEAD >"$dir/run/COMMIT"
  cp "$root"/../shared/third_party/mlx-v0.32.2/{test_fft.py,mlx_tests.py} "$dir/mlxtests/"
  cp "$root/../shared/tools/mlx-on-device.sh" "$dir/run/"
  [ -f "$dir/mlx/mlx.part.aa" ] || bash "$root/../shared/tools/stage-mlx.sh" "$dir/mlx"
  ls -l "$dir"/lib "$dir"/mlx
  exit 0
fi

out=${OUT:-/tmp/frameworks-out}
logs=/tmp/frameworks-logs
mkdir -p "$out" "$logs"
lib=$dir/lib/libhipfft_pool_cufft.so
summary=$out/summary.txt
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1

note() { echo "$*" | tee -a "$summary"; }

# run NAME SECONDS CMD...: natively, with the log in $logs/NAME.log
run() {
  local name=$1 secs=$2; shift 2
  local t0=$SECONDS
  timeout "$secs" "$@" >"$logs/$name.log" 2>&1
  local rc=$?
  note "$name: exit $rc in $((SECONDS - t0)) s: $(grep -E '^(SUMMARY|RESULT)|passed|failed' "$logs/$name.log" | tail -1)"
  # Packed after every step, so a call stopped at its limit still brings back what ran.
  tar czf "$out/$phase-logs.tgz" -C "$logs" .
}

# pre NAME SECONDS CEILING CMD...: through the interposer, the pool's capacity = ceiling
# (or $CAPACITY),
# its metrics JSON in $logs/NAME.metrics.json
pre() {
  local name=$1 secs=$2 ceiling=$3; shift 3
  run "$name" "$secs" env LD_PRELOAD="$lib" HIPFFT_POOL_LIVE_CEILING="$ceiling" HIPFFT_POOL_CAPACITY="${CAPACITY:-$ceiling}" \
    HIPFFT_POOL_ACQUIRE_TIMEOUT_MS=5000 HIPFFT_POOL_METRICS_OUT="$logs/$name.metrics.json" "$@"
  [ -f "$logs/$name.metrics.json" ] && note "  metrics: $(python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print({k: m.get(k) for k in ('peak_live','ceiling','live_at_exit','creations','destroys','hits','misses','virtual_handles_peak','virtual_handles_live','execs','captured_execs','captured_released','capture_misses','capture_policy','sticky_lease_uses','sticky_flushes','own_real_plans_peak','failures','eviction','capture_residents','capture_resident_limit','captured_on_residents')})" "$logs/$name.metrics.json")"
}

finish() {
  tar czf "$out/$phase-logs.tgz" -C "$logs" .
  note "logs: $phase-logs.tgz"
}

# Keeps MLX's first part for the next call (the machine stays warm 30 s between calls).
keep_mlx_part() {
  mkdir -p /tmp/mlxparts && cp "$dir"/mlx/mlx.part.aa /tmp/mlxparts/ 2>/dev/null && note "kept mlx.part.aa"
}

# Builds the encoder probe (scripts/probes/mlx_encoder_pattern.c) as /tmp/mep.
build_probe() {
  gcc -O2 -o /tmp/mep "$root/scripts/probes/mlx_encoder_pattern.c" -I/usr/local/cuda/include \
    -L/usr/local/cuda/lib64 -lcufft -lcudart -lcuda -lpthread -lm 2>&1 | tee -a "$summary"
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}

note "== $phase $(date -u +%FT%TZ) commit $(cat "$dir/run/COMMIT" 2>/dev/null || echo unknown)"
nvidia-smi -L 2>&1 | tee -a "$summary"

case $phase in
keep)
  keep_mlx_part
  ;;
probe)
  # MLX's command encoder around cuFFT without MLX (scripts/probes/mlx_encoder_pattern.c):
  # which of its steps breaks when plans are destroyed soon after use, natively, and whether
  # the interposer's resident plans keep it right at ceiling 12. Keeps mlx.part.aa too.
  keep_mlx_part
  build_probe
  p="/tmp/mep --buffers ${BUFFERS:-200}"
  for i in 1 2; do
    run "probe-native-mlx-way-$i" 60 $p --cache 8 --extract 1 --update 1
  done
  run probe-native-no-update 60 $p --cache 8 --extract 1 --update 0
  run probe-native-child-graphs 60 $p --cache 8 --extract 0 --update 1
  run probe-native-host-node 60 $p --cache 8 --extract 1 --update 1 --extra-node 3
  run probe-native-keep-all 60 $p --cache 0
  for i in 1 2; do
    pre "probe-pool-c12-auto-$i" 60 12 $p --cache 8
    HIPFFT_POOL_CAPTURE=release-on-run pre "probe-pool-c12-release-$i" 60 12 $p --cache 8
  done
  pre probe-pool-c12-auto-keep-all 60 12 $p --cache 0
  for f in "$logs"/probe-*.log; do echo "$(basename "$f" .log): $(grep -h '^DETAIL' "$f")" >>"$summary"; done
  ;;
gap)
  # Where the interposer's extra time under MLX goes, without MLX: the encoder probe at MLX's
  # cache 128 (every plan kept, values unchecked), natively as MLX calls cuFFT, natively with
  # SetStream/SetWorkArea moved inside the capture and with the typed execs (what the
  # interposer did up to c5e25c7), and through the interposer as of $dir/lib-old (when staged)
  # and $dir/lib, in turn. Keeps mlx.part.aa for DIAG=gap. PROFILE_ONLY=1 runs natively,
  # the two builds, and $dir/lib with the host profile (HIPFFT_POOL_HOST_PROFILE: per export,
  # the time inside the real libraries and the rest) instead of the native variants.
  keep_mlx_part
  build_probe
  p="/tmp/mep --cache 0 --check 0 --buffers ${BUFFERS:-4000}"
  for i in 1 2 3; do
    run "gap-native-$i" 60 $p
    if [ -z "${PROFILE_ONLY:-}" ]; then
      run "gap-native-set-inside-$i" 60 $p --set-inside 1
      run "gap-native-typed-$i" 60 $p --typed 1
      run "gap-native-set-inside-typed-$i" 60 $p --set-inside 1 --typed 1
    fi
    [ -f "$dir/lib-old/libhipfft_pool_cufft.so" ] && lib=$dir/lib-old/libhipfft_pool_cufft.so pre "gap-pool-old-$i" 60 128 $p
    pre "gap-pool-new-$i" 60 128 $p
    [ -n "${PROFILE_ONLY:-}" ] && HIPFFT_POOL_HOST_PROFILE=1 pre "gap-pool-profile-$i" 60 128 $p
  done
  for f in "$logs"/gap-*.log; do
    echo "$(basename "$f" .log): $(grep -h '^RESULT' "$f" | grep -o '[0-9.]* us per op') $(grep -h '^DETAIL' "$f")" >>"$summary"
  done
  ;;
torch)
  keep_mlx_part
  python3 -c "import torch, cupy, numpy; print('torch', torch.__version__, 'cupy', cupy.__version__, 'numpy', numpy.__version__)" 2>&1 | tee -a "$summary"
  r=$dir/run
  run torch-native 100 python3 "$r/torch_spectral_subset.py"
  pre torch-pool-c128 100 128 python3 "$r/torch_spectral_subset.py"
  pre torch-pool-c12 100 12 python3 "$r/torch_spectral_subset.py"
  run cupy-native 100 python3 "$r/cupy_fft_subset.py"
  pre cupy-pool-c128 100 128 python3 "$r/cupy_fft_subset.py"
  pre cupy-pool-c12 100 12 python3 "$r/cupy_fft_subset.py"
  run bench-native 80 python3 "$r/torch_cupy_bench.py" --shapes "$r/probe-shapes.json" --cycles 400 --miss-cycles 30 --warmup 10 --json "$logs/bench-native.json"
  pre bench-pool-c128 80 128 python3 "$r/torch_cupy_bench.py" --shapes "$r/probe-shapes.json" --cycles 400 --miss-cycles 30 --warmup 10 --json "$logs/bench-pool-c128.json"
  ;;
mlx)
  mkdir -p /tmp/mlxparts && cp "$dir"/mlx/mlx.part.ab /tmp/mlxparts/
  export PARTS_DIR=/tmp/mlxparts
  # shellcheck disable=SC1091
  source "$dir/run/mlx-on-device.sh" >"$logs/mlx-unpack.log" 2>&1
  cat "$logs/mlx-unpack.log" >>"$summary"
  t=$dir/mlxtests
  cd "$t" || exit 1
  export DEVICE=gpu MLX_CUDA_FFT_CACHE_SIZE=128
  [ -n "${QUICK:-}" ] || run mlx-test-native 120 python3 -m pytest -q -p no:cacheprovider test_fft.py
  for c in 128 26 12; do
    pre "mlx-test-pool-c$c" 120 "$c" python3 -m pytest -q -p no:cacheprovider test_fft.py
  done
  # test_fft_vmap at ceiling 12, repeated, under each capture policy, and natively
  for i in $([ -n "${QUICK:-}" ] || echo 1 2); do
    run "mlx-vmap-native-$i" 60 python3 -m pytest -q -p no:cacheprovider test_fft.py -k vmap
    pre "mlx-vmap-pool-c12-auto-$i" 60 12 python3 -m pytest -q -p no:cacheprovider test_fft.py -k vmap
    HIPFFT_POOL_CAPTURE=release-on-run pre "mlx-vmap-pool-c12-release-$i" 60 12 python3 -m pytest -q -p no:cacheprovider test_fft.py -k vmap
    HIPFFT_POOL_CAPTURE=pin pre "mlx-vmap-pool-c128-pin-$i" 60 128 python3 -m pytest -q -p no:cacheprovider test_fft.py -k vmap
  done
  b="python3 $dir/run/mlx_cycle_bench.py --shapes $dir/run/probe-shapes.json --cycles 300 --warmup 20"
  [ -n "${QUICK:-}" ] || run mlx-cycle-native-cache128 60 $b
  pre mlx-cycle-pool-cache128 60 128 $b
  if [ -z "${QUICK:-}" ]; then
    HIPFFT_POOL_CAPTURE=release-on-run pre mlx-cycle-pool-cache128-release 60 128 $b
    MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 run mlx-cycle-native-cache8 60 $b --cycles 60
    MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 run mlx-cycle-native-cache8-again 60 $b --cycles 60
  fi
  MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 pre mlx-cycle-pool-cache8 60 128 $b
  MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 pre mlx-cycle-pool-cache8-c26 60 26 $b
  ;;
diag)
  # The ceiling-12 wrong values: test_fftn and test_fft_vmap at ceiling 12, repeated, under
  # each capture policy and with MLX committing each op's graph at once
  # (MLX_MAX_OPS_PER_BUFFER=1: no captured work waits for a later launch).
  mkdir -p /tmp/mlxparts && cp "$dir"/mlx/mlx.part.ab /tmp/mlxparts/
  export PARTS_DIR=/tmp/mlxparts
  # shellcheck disable=SC1091
  source "$dir/run/mlx-on-device.sh" >"$logs/mlx-unpack.log" 2>&1
  cat "$logs/mlx-unpack.log" >>"$summary"
  cd "$dir/mlxtests" || exit 1
  export DEVICE=gpu MLX_CUDA_FFT_CACHE_SIZE=128
  t="python3 -m pytest -q -p no:cacheprovider test_fft.py"
  b="python3 $dir/run/mlx_cycle_bench.py --shapes $dir/run/probe-shapes.json --cycles 300 --warmup 20"
  # cycle_runs PREFIX ROUNDS CEILINGS...: the cycle at MLX's cache 128 natively and through
  # the interposer, ROUNDS times in turn; then at cache 8 (thrash check off) at each ceiling.
  cycle_runs() {
    local prefix=$1 rounds=$2 c i; shift 2
    for i in $(seq "$rounds"); do
      run "$prefix-cycle-native-cache128-$i" 60 $b
      pre "$prefix-cycle-pool-cache128-$i" 60 128 $b
    done
    for c in "$@"; do
      MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 pre "$prefix-cycle-pool-cache8-c$c" 60 "$c" $b
    done
  }
  case ${DIAG:-policies} in
  policies)
    pre diag-c128 90 128 $t
    pre diag-c26 90 26 $t
    for i in 1 2; do
      pre "diag-c12-auto-$i" 90 12 $t
      HIPFFT_POOL_CAPTURE=release-on-run pre "diag-c12-release-$i" 90 12 $t
      HIPFFT_POOL_CAPTURE=pin HIPFFT_POOL_CAPTURE_PIN_LIMIT=1000 pre "diag-c12-pin-$i" 90 12 $t
      MLX_MAX_OPS_PER_BUFFER=1 pre "diag-c12-ops1-$i" 90 12 $t
    done
    ;;
  proof)
    # (At a82ce86: the launch proof of that time, since removed.) With
    # `auto` the default: test_fft.py at each ceiling (four times at 12), natively once, and
    # the cycle natively and interposed at MLX caches 128 and 8.
    run proof-native 90 $t
    pre proof-c128 90 128 $t
    pre proof-c26 90 26 $t
    for i in 1 2 3 4; do pre "proof-c12-auto-$i" 90 12 $t; done
    HIPFFT_POOL_CAPTURE=pin pre proof-c26-pin 90 26 $t
    for i in 1 2; do
      run "mlx-cycle-native-cache128-$i" 60 $b
      pre "mlx-cycle-pool-cache128-$i" 60 128 $b
    done
    HIPFFT_POOL_CAPTURE=release-on-run pre mlx-cycle-pool-cache128-release 60 128 $b
    MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 run mlx-cycle-native-cache8 60 $b --cycles 60
    MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 pre mlx-cycle-pool-cache8 60 128 $b
    MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 pre mlx-cycle-pool-cache8-c26 60 26 $b
    ;;
  verify)
    # test_fft.py natively and at each ceiling under the default policy (three times at 12,
    # where idle pins must give way), `release-on-run` at 12, with pytest's capture off (-s)
    # so that a message before an abort reaches the log; then the cycle.
    run verify-native 90 $t
    pre verify-c128 90 128 $t -s
    pre verify-c26 90 26 $t -s
    for i in 1 2 3 4; do pre "verify-c12-auto-$i" 90 12 $t -s; done
    HIPFFT_POOL_CAPTURE=release-on-run pre verify-c12-release 90 12 $t -s
    for i in 1 2; do
      run "mlx-cycle-native-cache128-$i" 60 $b
      pre "mlx-cycle-pool-cache128-$i" 60 128 $b
    done
    MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 run mlx-cycle-native-cache8 60 $b --cycles 60
    MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 pre mlx-cycle-pool-cache8 60 128 $b
    MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 pre mlx-cycle-pool-cache8-c26 60 26 $b
    MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 pre mlx-cycle-pool-cache8-c12 60 12 $b
    ;;
  eager)
    # Whether the destroyed plans' kernels are the fault: CUDA's lazy module loading (the
    # default) against CUDA_MODULE_LOADING=EAGER, natively at MLX's cache 8 and through the
    # pool at capacity 12 (ceiling 128), where both crash with lazy loading (docs/history/2026-12.md).
    for i in 1 2; do
      MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 CUDA_MODULE_LOADING=EAGER run "eager-native-cycle-cache8-$i" 60 $b --cycles 60
    done
    MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 run eager-native-cycle-cache8-lazy 60 $b --cycles 60
    for i in 1 2; do CUDA_MODULE_LOADING=EAGER CAPACITY=12 pre "eager-cap12-ceil128-$i" 90 128 $t -s; done
    ;;
  bisect)
    # Ceiling 12 taken apart: the same evictions and destroys with the ceiling out of the way
    # (capacity 12, ceiling 128: no waits, no pressure, no proofs), plans destroyed by the
    # pool under MLX's cache 8, each op's graph launched at once, and every execution pinned.
    for i in 1 2 3; do CAPACITY=12 pre "bisect-cap12-ceil128-$i" 90 128 $t -s; done
    for i in 1 2; do
      MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 CAPACITY=8 pre "bisect-cycle-cache8-cap8-ceil128-$i" 60 128 $b
    done
    MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 CAPACITY=8 pre bisect-test-cache8-cap8-ceil128 90 128 $t -s
    for i in 1 2; do MLX_MAX_OPS_PER_BUFFER=1 pre "bisect-c12-ops1-$i" 90 12 $t -s; done
    for i in 1 2; do HIPFFT_POOL_CAPTURE=pin HIPFFT_POOL_CAPTURE_PIN_LIMIT=1000 pre "bisect-c12-pin-$i" 90 12 $t -s; done
    ;;
  cause)
    # Whether the ceiling-12 failures are MLX's own: MLX destroying plans natively (cache 8,
    # thrash check off) in the cycle and in test_fft.py, with MLX's graph-exec cache on, off
    # (MLX_CUDA_GRAPH_CACHE_SIZE=0: every graph instantiated afresh) and without graphs; then
    # the pool at ceiling 12 the same ways.
    for i in 1 2 3; do
      MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 run "cause-native-cycle-cache8-$i" 60 $b --cycles 60
      MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 MLX_CUDA_GRAPH_CACHE_SIZE=0 run "cause-native-cycle-cache8-nographcache-$i" 60 $b --cycles 60
    done
    MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 MLX_USE_CUDA_GRAPHS=0 run cause-native-cycle-cache8-nographs 60 $b --cycles 60
    for i in 1 2; do
      MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 run "cause-native-test-cache8-$i" 120 $t -s
    done
    MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 MLX_CUDA_GRAPH_CACHE_SIZE=0 run cause-native-test-cache8-nographcache 120 $t -s
    for i in 1 2 3; do
      pre "cause-c12-auto-$i" 90 12 $t -s
      MLX_CUDA_GRAPH_CACHE_SIZE=0 pre "cause-c12-nographcache-$i" 90 12 $t -s
    done
    HIPFFT_POOL_CAPTURE_RELEASE=after-graph pre cause-c12-after-graph 90 12 $t -s
    MLX_USE_CUDA_GRAPHS=0 pre cause-c12-nographs 90 12 $t -s
    MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 run cause-native-cycle-cache8-sanitizer 120 compute-sanitizer --tool memcheck --print-limit 10 $b --cycles 20 --warmup 2
    ;;
  c12)
    # The ceiling-12 failures (docs/history/2026-12.md): each policy three times,
    # host-node releases held until an event after their graph (`after-graph`), and MLX
    # committing each op's graph at once; then the failing tests under compute-sanitizer.
    for i in 1 2 3; do
      pre "c12-auto-$i" 90 12 $t -s
      HIPFFT_POOL_CAPTURE=release-on-run pre "c12-release-$i" 90 12 $t -s
      HIPFFT_POOL_CAPTURE_RELEASE=after-graph pre "c12-auto-after-graph-$i" 90 12 $t -s
      HIPFFT_POOL_CAPTURE=release-on-run HIPFFT_POOL_CAPTURE_RELEASE=after-graph pre "c12-release-after-graph-$i" 90 12 $t -s
    done
    MLX_MAX_OPS_PER_BUFFER=1 pre c12-ops1 90 12 $t -s
    pre c12-sanitizer 240 12 compute-sanitizer --tool memcheck --print-limit 20 $t -s -k "jvp or vmap or norm"
    ;;
  resident)
    # Resident plans (captures with no node keep their plan for the process's life, a quarter
    # of the ceiling; host nodes beyond): test_fft.py at each ceiling, five times at 12, twice
    # under release-on-run at 12, once at capacity 12 under ceiling 128; then the cycle at
    # MLX's cache 128 alternated with native, and at cache 8 at ceilings 128, 26 and 12.
    pre res-c128 90 128 $t -s
    pre res-c26 90 26 $t -s
    for i in 1 2 3 4 5; do pre "res-c12-auto-$i" 90 12 $t -s; done
    for i in 1 2; do HIPFFT_POOL_CAPTURE=release-on-run pre "res-c12-release-$i" 90 12 $t -s; done
    CAPACITY=12 pre res-cap12-ceil128 90 128 $t -s
    MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 run res-cycle-native-cache8 60 $b --cycles 60
    cycle_runs res 3 128 26 12
    ;;
  graphs)
    # MLX's graph-exec updates carry a destroyed plan's kernels (docs/history/2026-12.md): test_fft.py at
    # ceilings 128 and 26 (twice), and at 12 with MLX's graphs off (three times) and on (once:
    # the interposer's warning), natively with graphs off; then the cycle as in `resident`.
    pre gr-c128 90 128 $t -s
    for i in 1 2; do pre "gr-c26-$i" 90 26 $t -s; done
    for i in 1 2 3; do MLX_USE_CUDA_GRAPHS=0 pre "gr-c12-nographs-$i" 90 12 $t -s; done
    pre gr-c12-graphs 90 12 $t -s
    MLX_USE_CUDA_GRAPHS=0 run gr-native-nographs 90 $t -s
    cycle_runs gr 3 128 26
    MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 MLX_USE_CUDA_GRAPHS=0 pre gr-cycle-pool-cache8-c12-nographs 60 12 $b
    MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 MLX_USE_CUDA_GRAPHS=0 run gr-cycle-native-cache8-nographs 60 $b --cycles 60
    ;;
  lru)
    # Whether destroying the least recently used plan first (HIPFFT_POOL_EVICTION=lru) instead
    # of the cheapest to remake keeps MLX's kept graphs away from destroyed plans: test_fft.py
    # four times at ceiling 26 and three at 12.
    for i in 1 2 3 4; do HIPFFT_POOL_EVICTION=lru pre "lru-c26-$i" 90 26 $t -s; done
    for i in 1 2 3; do HIPFFT_POOL_EVICTION=lru pre "lru-c12-$i" 90 12 $t -s; done
    ;;
  final)
    # The interposer's defaults (auto capture, LRU eviction) with no variable set:
    # test_fft.py at each ceiling (three times at 12), then the cycle at MLX's cache 128
    # alternated with native, and at cache 8 (thrash check off) at ceilings 128 and 26.
    for c in 128 26 12 12 12; do pre "final-c$c-$SECONDS" 90 $c $t -s; done
    cycle_runs final 2 128 26
    ;;
  gap)
    # The cycle at MLX's cache 128, 1500 cycles, in turn: natively, through the interposer
    # as of $dir/lib-old (when staged) and $dir/lib, and $dir/lib with the pool's threads
    # never polling (HIPFFT_POOL_POLL_US=0).
    b="$b --cycles 1500 --warmup 50"
    for i in 1 2 3 4 5; do
      run "gap-cycle-native-$i" 60 $b
      [ -f "$dir/lib-old/libhipfft_pool_cufft.so" ] && lib=$dir/lib-old/libhipfft_pool_cufft.so pre "gap-cycle-old-$i" 60 128 $b
      pre "gap-cycle-new-$i" 60 128 $b
      HIPFFT_POOL_POLL_US=0 pre "gap-cycle-new-nopoll-$i" 60 128 $b
    done
    ;;
  check)
    # test_fft.py once at each ceiling (128, 26, 12) with the interposer's defaults.
    for c in 128 26 12; do pre "check-c$c" 90 $c $t -s; done
    ;;
  profile)
    # The interposer's own host time under MLX (HIPFFT_POOL_HOST_PROFILE, in the metrics
    # JSON), beside native and unprofiled runs of the same cycle.
    b="$b --cycles 1500 --warmup 50"
    for i in $(seq "${ROUNDS:-5}"); do
      run "prof-cycle-native-$i" 60 $b
      [ -f "$dir/lib-old/libhipfft_pool_cufft.so" ] && lib=$dir/lib-old/libhipfft_pool_cufft.so pre "prof-cycle-old-$i" 60 128 $b
      pre "prof-cycle-pool-$i" 60 128 $b
    done
    for i in 1 2 3; do HIPFFT_POOL_HOST_PROFILE=1 pre "prof-cycle-profile-$i" 60 128 $b; done
    ;;
  perf)
    # The cycle for the performance table: MLX's cache 128 natively and through the
    # interposer alternated five times (the median of each side against the 3% target),
    # then cache 8 with the thrash check off, natively and through the pool at ceilings
    # 128 and 26.
    for i in 1 2 3 4 5; do
      run "perf-native-cache128-$i" 60 $b
      pre "perf-pool-cache128-$i" 60 128 $b
    done
    for i in 1 2; do
      MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 run "perf-native-cache8-$i" 60 $b --cycles 60
    done
    MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 pre perf-pool-cache8-c128 60 128 $b
    MLX_CUDA_FFT_CACHE_SIZE=8 MLX_ENABLE_CACHE_THRASHING_CHECK=0 pre perf-pool-cache8-c26 60 26 $b
    ;;
  esac
  ;;
*)
  echo "unknown phase $phase" >&2
  exit 2
  ;;
esac
finish
