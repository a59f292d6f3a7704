#!/usr/bin/env python3
"""The 26-shape probe cycle through MLX (mx.fft on the GPU), us per call.

Same method as scripts/torch_cupy_bench.py: one call = one transform of one shape; the 26
shapes run in turn, evaluated once per cycle (mx.eval of the cycle's 26 results, which
commits MLX's command graphs and waits); per-call time = cycle wall time / 26; the median
over the measured cycles after warm-up. The plan cache size is MLX's own
(MLX_CUDA_FFT_CACHE_SIZE, read by MLX at start), so each cache size is its own process.

    python3 mlx_cycle_bench.py [--shapes FILE] [--cycles N] [--warmup N] [--json PATH]
"""

import argparse
import json
import os
import statistics
import sys
import time

import mlx.core as mx


def load_shapes(path):
    with open(path) as f:
        return [(s["name"], s["kind"], int(s["n"]), int(s["batch"])) for s in json.load(f)["shapes"]]


def thread_report():
    """Each thread of this process at the end of the run: its name, the CPU it last ran on,
    its CPU time and context switches. The per-process fast and slow states of the cycle
    (docs/history/2026-12.md) are looked for here: which threads were busy, and where."""
    tick = os.sysconf("SC_CLK_TCK")
    out = []
    for tid in sorted(os.listdir("/proc/self/task"), key=int):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
            with open(f"/proc/self/task/{tid}/status") as f:
                status = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out.append({
            "tid": int(tid), "name": name, "cpu": int(fields[36]),
            "cpu_s": round((int(fields[11]) + int(fields[12])) / tick, 2),
            "voluntary_switches": int(status.get("voluntary_ctxt_switches", "0")),
            "involuntary_switches": int(status.get("nonvoluntary_ctxt_switches", "0")),
        })
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe-shapes.json"))
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args()
    mx.set_default_device(mx.gpu)
    shapes = load_shapes(a.shapes)
    inputs = []
    for _, kind, n, batch in shapes:
        if kind == "r2c":
            x = mx.random.normal((batch, n))
            inputs.append((lambda x=x: mx.fft.rfft(x)))
        elif kind == "c2r":
            x = mx.random.normal((batch, n // 2 + 1)) + 1j * mx.random.normal((batch, n // 2 + 1))
            inputs.append((lambda x=x, n=n: mx.fft.irfft(x, n=n)))
        else:
            x = mx.random.normal((batch, n)) + 1j * mx.random.normal((batch, n))
            inputs.append((lambda x=x: mx.fft.fft(x)))
    mx.eval(*[f() for f in inputs])
    times = []
    for c in range(a.warmup + a.cycles):
        t0 = time.perf_counter()
        mx.eval(*[f() for f in inputs])
        dt = time.perf_counter() - t0
        if c >= a.warmup:
            times.append(dt / len(inputs) * 1e6)
    out = {
        "cache_size": os.environ.get("MLX_CUDA_FFT_CACHE_SIZE", "128 (default)"),
        "thrash_check": os.environ.get("MLX_ENABLE_CACHE_THRASHING_CHECK", "default"),
        "preload": os.environ.get("LD_PRELOAD", ""),
        "cycles": a.cycles,
        "us_per_call_median": round(statistics.median(times), 2),
        "us_per_call_p10": round(sorted(times)[len(times) // 10], 2),
        "us_per_call_p90": round(sorted(times)[len(times) * 9 // 10], 2),
        "affinity": sorted(os.sched_getaffinity(0)),
        "threads": thread_report(),
    }
    print("RESULT " + json.dumps({k: v for k, v in out.items() if k != "threads"}), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
