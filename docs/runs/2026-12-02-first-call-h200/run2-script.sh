#!/usr/bin/env bash
# First calls on the H200, in processes of their own: cold (no warm-up; the first such process
# on a machine also fills CUDA's JIT cache), then warmed after a restart, each twice.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/machine.txt" 2>&1
ls -d ~/.nv/ComputeCache 2>/dev/null && du -sh ~/.nv/ComputeCache >> "$OUT/machine.txt"
echo "CUDA_CACHE_PATH=${CUDA_CACHE_PATH:-unset} CUDA_MODULE_LOADING=${CUDA_MODULE_LOADING:-unset}" >> "$OUT/machine.txt"
for i in 1 2; do
  ./first_call --runtime cuda --phase cold --manifest "$OUT/manifest.json" > "$OUT/cold$i.jsonl" 2> "$OUT/cold$i.err"; echo "cold$i rc=$?"
  du -sh ~/.nv/ComputeCache 2>/dev/null >> "$OUT/machine.txt"
done
for i in 1 2; do
  ./first_call --runtime cuda --phase restart --manifest "$OUT/manifest.json" > "$OUT/restart$i.jsonl" 2> "$OUT/restart$i.err"; echo "restart$i rc=$?"
done
cat "$OUT"/*.err | tail -5
