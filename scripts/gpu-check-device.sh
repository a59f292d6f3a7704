#!/usr/bin/env bash
# Runs on the device machine from the repository root: the GPU check, through CudaRuntime and
# through HipRuntime over hip-shim over CUDA. Log in $OUT/gpu-check.log.
set -uo pipefail
d=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export HIPFFT_POOL_BIN=$d/hipfft-pool
# On the device a GPU test that finds no GPU fails instead of reporting itself skipped.
export HIPFFT_POOL_REQUIRE_GPU=1
log=${OUT:-/tmp}/gpu-check.log
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; ls /usr/local/cuda/lib64/libcufft.so* | head -3
  echo "== info (cuda)"; "$d/hipfft-pool" info --runtime cuda
  echo "== cuda_gpu test"; "$d/cuda_gpu-test" --nocapture --test-threads=1
  echo "== gpu tests through CudaRuntime"; MLX_ROCM_FFT_CACHE_SIZE=128 "$d/gpu-test" fft --nocapture --test-threads=1
  echo "== gpu tests through HipRuntime over hip-shim over CUDA"
  HIPFFT_POOL_GPU_RUNTIME=hip HIPFFT_POOL_HIPFFT_LIB=$d/libhipfft.so HIPFFT_POOL_HIP_LIB=$d/libamdhip64.so HIP_SHIM_BACKEND=cuda \
    MLX_ROCM_FFT_CACHE_SIZE=128 "$d/gpu-test" fft --nocapture --test-threads=1
  echo "== probe (cuda)"; "$d/hipfft-pool" probe --runtime cuda
  echo "== probe (hip over shim over cuda)"
  HIPFFT_POOL_HIPFFT_LIB=$d/libhipfft.so HIPFFT_POOL_HIP_LIB=$d/libamdhip64.so HIP_SHIM_BACKEND=cuda "$d/hipfft-pool" probe --runtime hip
} 2>&1 | tee "$log"
echo "== sweep (cuda)" | tee -a "$log"
(cd "${OUT:-/tmp}" && "$d/hipfft-pool" sweep --runtime cuda --investigation --ceiling 12 --runs 3 --timeout 120 --no-progress \
   --report h200-sweep-report.txt --plot h200-sweep.svg --timeline h200-sweep.csv --json > h200-sweep.json; echo "sweep exit $?") 2>&1 | tail -5 | tee -a "$log"
