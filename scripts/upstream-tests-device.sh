#!/usr/bin/env bash
# PyTorch's own test/test_spectral_ops.py and CuPy's own tests/cupy_tests/fft_tests/, run
# unchanged natively and through libhipfft_pool_cufft.so, on the device machine.
#
# The upstream files are not part of this repository (they are the projects' own, under their
# licences); place them in a folder that .git/info/exclude ignores, with this layout:
#   DIR/torch/test_spectral_ops.py   pytorch/pytorch test/test_spectral_ops.py
#   DIR/torch/expecttest.py          a stand-in for the expecttest package when it is missing
#                                    (TestCase.assertExpectedInline, ACCEPT)
#   DIR/cupy/conftest.py             cupy/cupy tests/conftest.py
#   DIR/cupy/fft_tests/              cupy/cupy tests/cupy_tests/fft_tests/ (test_fft.py,
#                                    test_cache.py, __init__.py)
# and carry DIR plus the staged interposer (scripts/frameworks-device.sh stage LIBDIR):
#   scripts/upstream-tests-device.sh DIR LIBDIR [CEILING...]
# Logs (with -rfE: every failing test named), pytest's JUnit XML and the metrics of every
# process go to $OUT. TORCH_SECONDS and CUPY_SECONDS bound each run (default 300); JOBS is
# pytest-xdist's worker count (default 8); PARALLEL=1 runs the native and interposed suites of
# one framework at once (the GPU has room for both) to halve the wall time; ONLY=torch|cupy
# runs one framework; VERBOSE=1 names each test as it ends (a run cut at its limit still says
# which tests failed and which never ended).
set -uo pipefail
dir=$(cd "${1:?usage: upstream-tests-device.sh DIR LIBDIR [CEILING...]}" && pwd)
lib=$(cd "${2:?usage: upstream-tests-device.sh DIR LIBDIR [CEILING...]}" && pwd)/lib/libhipfft_pool_cufft.so
shift 2
ceilings=${*:-128 12}
out=${OUT:-/tmp/upstream-out}
mkdir -p "$out"
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
summary=$out/upstream-summary.txt
note() { echo "$*" | tee -a "$summary"; }
note "== upstream $(date -u +%FT%TZ) commit $(cat "$(dirname "$lib")/../run/COMMIT" 2>/dev/null || echo unknown)"
python3 -c "import torch, cupy, numpy; print('torch', torch.__version__, 'cupy', cupy.__version__, 'numpy', numpy.__version__)" 2>&1 | tee -a "$summary"

# suite NAME SECONDS CEILING(or native) CMD...: in the suite's folder
suite() {
  local name=$1 secs=$2 ceiling=$3; shift 3
  local t0=$SECONDS
  if [ "$ceiling" = native ]; then
    timeout "$secs" "$@" --junitxml="$out/$name.xml" >"$out/$name.log" 2>&1
  else
    timeout "$secs" env LD_PRELOAD="$lib" HIPFFT_POOL_LIVE_CEILING="$ceiling" HIPFFT_POOL_CAPACITY="$ceiling" \
      HIPFFT_POOL_ACQUIRE_TIMEOUT_MS=5000 HIPFFT_POOL_METRICS_OUT="$out/$name.%p.metrics.json" \
      "$@" --junitxml="$out/$name.xml" >"$out/$name.log" 2>&1
  fi
  local rc=$?
  note "$name: exit $rc in $((SECONDS - t0)) s: $(grep -E '(passed|failed|error)' "$out/$name.log" | tail -1)"
  if [ "$ceiling" != native ]; then
    python3 - "$out" "$name" <<'PY' | tee -a "$summary"
import glob, json, sys
out, name = sys.argv[1:3]
ms = [json.load(open(f)) for f in sorted(glob.glob(f"{out}/{name}.*.metrics.json"))]
if not ms:
    print("  metrics: none written (no process used cuFFT, or one died)")
for m in ms:
    print("  metrics:", {k: m.get(k) for k in ("peak_live", "ceiling", "creations", "destroys", "hits", "misses",
          "virtual_handles_peak", "execs", "captured_execs", "capture_misses", "own_real_plans_peak", "failures")})
PY
  fi
}

# pytest -q prints a dot per test; -v a line with the test id (-q -v would cancel out).
v=-q; [ "${VERBOSE:-0}" = 1 ] && v=-v
if [ "${ONLY:-torch}" = torch ]; then
cd "$dir/torch" || exit 1
# The CUDA instantiation of TestFFT (TestFFTCUDA); the doc examples run on the CPU only.
for c in native $ceilings; do
  PYTHONPATH="$dir/torch" suite "torch-$c" "${TORCH_SECONDS:-300}" "$c" python3 -m pytest -rfE -p no:cacheprovider -n "${JOBS:-8}" test_spectral_ops.py -k TestFFTCUDA $v &
  [ "${PARALLEL:-0}" = 1 ] || wait
done
wait
fi
if [ "${ONLY:-cupy}" = cupy ]; then
cd "$dir/cupy" || exit 1
for c in native $ceilings; do
  suite "cupy-$c" "${CUPY_SECONDS:-300}" "$c" python3 -m pytest -rfE -p no:cacheprovider -n "${JOBS:-8}" fft_tests $v &
  [ "${PARALLEL:-0}" = 1 ] || wait
done
wait
fi
# The failures one way and not the other, by test id.
for fw in torch cupy; do
  for c in $ceilings; do
    python3 - "$out/$fw-native.log" "$out/$fw-$c.log" "$fw-$c" <<'PY' | tee -a "$summary"
import re, sys
def failed(path):
    try:
        text = open(path, errors="replace").read()
    except OSError:
        return set()
    return set(re.findall(r"^(?:FAILED|ERROR) (\S+)", text, re.M)) | set(re.findall(r"\] (?:FAILED|ERROR) (\S+)", text))
import os
if not (os.path.exists(sys.argv[1]) and os.path.exists(sys.argv[2])):
    sys.exit(0)  # that framework was not run (ONLY)
native, pooled = failed(sys.argv[1]), failed(sys.argv[2])
if not native and not pooled:
    print(f"  {sys.argv[3]}: no failing test named in either log (a run cut at its limit names "
          "none unless VERBOSE=1): compare the counts above")
    sys.exit(0)
print(f"  {sys.argv[3]}: {len(native)} failing natively, {len(pooled)} interposed; "
      f"{len(pooled - native)} only interposed, {len(native - pooled)} only native")
for t in sorted(pooled - native)[:60]:
    print("    only interposed:", t)
PY
  done
done
