#!/usr/bin/env bash
# Builds everything the GPU benchmark needs, here (no GPU or CUDA toolkit needed: CUDA is
# loaded at run time), into .device/bench/, and prints the command that runs it on the
# device machine.
#
#   scripts/gpu-bench.sh            # build + stage
#
# .device/ is ignored through the repository's .git/info/exclude (not .gitignore), so the
# staged binaries are never committed; the device run carries the folder explicitly.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dest=.device/bench

echo "gpu-bench: building (release, --features cuda)" >&2
cargo build --release --features cuda --example gpu_bench --example first_call
cargo build --release -p hip-shim --features cuda
# The cuFFT interposer, for part 4 (MLX's own FFT through it).
cargo build --release -p hipfft-pool-cufft
# The CPU benches too, to run on the device machine's cores (16 there, 2 here).
bench_json=$(cargo bench --no-run --bench threads --bench hit_path --bench exec_path --message-format=json;
  cargo bench --no-run -p hipfft-pool-intercept --bench exec_host --message-format=json)

exe_of() { # the bench executable cargo reported for target $1
  printf '%s\n' "$bench_json" | python3 -c '
import json, sys
want = sys.argv[1]
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == want and m.get("executable"):
        print(m["executable"])
' "$1" | tail -n 1
}

threads_exe=$(exe_of threads)
hit_exe=$(exe_of hit_path)
exec_exe=$(exe_of exec_path)
host_exe=$(exe_of exec_host)
[ -n "$threads_exe" ] && [ -n "$hit_exe" ] && [ -n "$exec_exe" ] && [ -n "$host_exe" ] || { echo "gpu-bench: cargo did not report the bench executables" >&2; exit 1; }

rm -rf "$dest"
mkdir -p "$dest/lib"
# Stripped: the device run carries at most 64 MiB.
strip_copy() { cp "$1" "$2"; strip --strip-debug "$2" 2>/dev/null || true; }
strip_copy target/release/examples/gpu_bench "$dest/gpu_bench"
strip_copy target/release/examples/first_call "$dest/first_call"
strip_copy target/release/libhip_shim.so "$dest/lib/libhip_shim.so"
ln -s libhip_shim.so "$dest/lib/libhipfft.so"
ln -s libhip_shim.so "$dest/lib/libamdhip64.so"
strip_copy "$threads_exe" "$dest/threads_bench"
strip_copy "$hit_exe" "$dest/hit_path_bench"
strip_copy "$exec_exe" "$dest/exec_path_bench"
strip_copy "$host_exe" "$dest/exec_host_bench"
strip_copy target/release/libhipfft_pool_cufft.so "$dest/lib/libhipfft_pool_cufft.so"
cp scripts/frameworks/mlx_cycle_bench.py data/probe-shapes.json ../shared/tools/mlx-on-device.sh "$dest/"
# MLX's CUDA wheels travel apart (two parts of at most 36 MiB), packed once.
# Without it (no MLX tools here, or no download), the device run has no MLX rows.
[ -f .device/mlx/mlx.part.aa ] || bash ../shared/tools/stage-mlx.sh .device/mlx >&2 ||
  echo "gpu-bench: warning: MLX's wheels could not be packed: the device run will have no MLX rows" >&2
commit=$(git rev-parse --short HEAD)
dirty=$(git status --porcelain --untracked-files=no | grep -q . && echo "+dirty" || true)
echo "${commit}${dirty}" > "$dest/COMMIT"
# The shim exports must be there (a non-cuda shim would run the sim, not cuFFT).
# (grep reads a process substitution: with pipefail, `strings | grep -q` fails whenever grep
# stops reading early and strings dies of SIGPIPE.)
if ! grep -q 'cufftCreate' <(strings "$dest/lib/libhip_shim.so"); then
  echo "gpu-bench: warning: the staged hip-shim does not look like a --features cuda build" >&2
fi

du -sh "$dest" >&2
ls -l "$dest" "$dest/lib" >&2
cat <<MSG

Staged in $root/$dest (commit ${commit}${dirty}).
Run on the device machine (repository root as working directory, carrying .device/bench):

  bash scripts/gpu-bench-device.sh

For the MLX rows, carry .device/mlx/mlx.part.aa, then .device/mlx/mlx.part.ab, each in a call
of its own that copies it to /tmp/mlxparts, then .device/bench (calls within 30 s of each
other keep the machine warm; each carry is at most 64 MiB; see the script's head).

It sets LD_LIBRARY_PATH=/usr/local/cuda/lib64 for the Rust programs itself, writes to \$OUT
(gpu_bench.json, torch_cupy.json, cpu_benches.json, summary.md and the raw outputs), and ends
with one combined table. The Rust part alone:

  LD_LIBRARY_PATH=/usr/local/cuda/lib64 HIPFFT_POOL_HIPFFT_LIB=$dest/lib/libhipfft.so \\
    HIPFFT_POOL_HIP_LIB=$dest/lib/libamdhip64.so $dest/gpu_bench --json "\$OUT/gpu_bench.json"
MSG
