#!/usr/bin/env bash
# On the device machine: how the CUDA runtime (static and dynamic), PyTorch, JAX and CuPy reach
# the driver's graph calls and cuFFT (scripts/probes/driver_reach.c), and what a captured cuFFT
# execution leaves in a graph (scripts/probes/captured_kernels.c). Output under $OUT.
set -uo pipefail
out=${OUT:-/tmp/reach-out}; mkdir -p "$out"
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
gcc -O2 -shared -fPIC -o /tmp/reach.so scripts/probes/driver_reach.c -ldl -lpthread || exit 1
nvcc -O2 -o /tmp/ck scripts/probes/captured_kernels.c -lcufft -lcuda -ldl 2>&1 | tail -3
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
run() { local name=$1; shift; timeout 120 env LD_PRELOAD=/tmp/reach.so "$@" >"$out/$name.log" 2>&1; echo "$name rc $?"; grep -c REACH "$out/$name.log"; }
/tmp/ck > "$out/captured_kernels.txt" 2>&1; echo "ck rc $?"
run ck-static /tmp/ck
python3 - > "$out/torch-capture.txt" 2>&1 <<'PY'
import torch
x = torch.randn(4, 256, device='cuda', dtype=torch.complex64)
torch.cuda.synchronize()
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    y = torch.fft.fft(x); torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = torch.fft.fft(x)
g.replay(); torch.cuda.synchronize()
print("torch graph ok", (y - torch.fft.fft(x)).abs().max().item())
PY
echo "torch plain rc $?"
cat > /tmp/t.py <<'PY'
import torch
x = torch.randn(4, 256, device='cuda', dtype=torch.complex64)
y = torch.fft.fft(x); torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = torch.fft.fft(x)
g.replay(); torch.cuda.synchronize(); print("ok")
PY
run torch python3 /tmp/t.py
cat > /tmp/j.py <<'PY'
import jax, jax.numpy as jnp
x = jnp.ones((4, 256), jnp.complex64)
print(jnp.fft.fft(x).block_until_ready()[0, 0], jax.devices())
PY
run jax python3 /tmp/j.py
cat > /tmp/c.py <<'PY'
import cupy as cp
x = cp.ones((4, 256), cp.complex64)
print(cp.fft.fft(x)[0, 0])
PY
run cupy python3 /tmp/c.py
python3 - > "$out/where.txt" 2>&1 <<'PY'
import glob, os, site, subprocess
for sp in site.getsitepackages():
    for pat in ["**/libcufft.so*", "**/xla_cuda_plugin.so", "**/libcudart.so*", "**/libcuda.so*"]:
        for f in glob.glob(os.path.join(sp, pat), recursive=True):
            print(f)
PY
for f in $(grep xla_cuda_plugin "$out/where.txt"); do readelf -d "$f" | grep NEEDED >> "$out/where.txt"; nm -D --undefined-only "$f" | grep -ci cufft >> "$out/where.txt"; done
ls -l /usr/lib/x86_64-linux-gnu/libcuda.so* /usr/local/nvidia/lib64/libcuda.so* 2>/dev/null >> "$out/where.txt"
lc=$(ldconfig -p | awk '/libcuda.so.1 /{print $NF; exit}')
echo "libcuda: $lc" >> "$out/where.txt"
nm -D --defined-only "$lc" | awk '{print $3}' | grep -E '^cu(Graph|StreamBeginCapture|StreamEndCapture|StreamGetCaptureInfo|GetProcAddress|StreamIsCapturing)' | sort > "$out/libcuda-graph-symbols.txt"
wc -l "$out/libcuda-graph-symbols.txt"
cat "$out/captured_kernels.txt" | cut -c1-400
for n in ck-static torch jax cupy; do echo "== $n"; grep REACH "$out/$n.log" | grep -E 'Graph|Capture|GetProcAddress|dlsym-fft' | sort | head -80; done
