#!/usr/bin/env python3
"""torch.fft and CuPy on the 26-shape probe cycle, at plan-cache sizes 8 and 128.

Same method as examples/gpu_bench.rs: one call = one transform of one shape; the 26 shapes
run in turn on one stream, synchronized once per cycle; per-call time = cycle wall time / 26;
the median over the measured cycles after warm-up cycles. Inputs are allocated once per shape
beforehand; outputs are whatever each library allocates per call (its caching allocator), as
a user's call does. torch is also measured with `out=` (no output allocation).

Plan caches: torch `torch.backends.cuda.cufft_plan_cache[dev].max_size`, CuPy
`cupy.fft.config.get_plan_cache().set_size(n)`; both cleared before each run. At size 8 the
26-shape cycle misses on every call (LRU), at 128 the set fits.

    python3 scripts/torch_cupy_bench.py [--json PATH] [--cycles N] [--miss-cycles N]

A framework that cannot be imported or finds no GPU is reported as skipped (exit 0).
"""

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES_JSON = os.path.join(HERE, "..", "data", "probe-shapes.json")

# The embedded probe shapes (data/probe-shapes.json), used when the file is not beside us.
FALLBACK_SHAPES = (
    [("rfft", "r2c", n, 4) for n in (2, 8, 400, 512, 1024, 1200, 2048)]
    + [("irfft", "c2r", n, 4) for n in (2, 8, 400, 512, 1024, 1200, 2048)]
    + [("fft", "c2c", n, 3) for n in (8, 512, 1024, 2048)]
    + [("roundtrip-r2c", "r2c", 400, 3), ("roundtrip-r2c", "r2c", 1200, 3)]
    + [("roundtrip-c2r", "c2r", 400, 3), ("roundtrip-c2r", "c2r", 1200, 3)]
    + [("stft-r2c", "r2c", 400, 512), ("stft-r2c", "r2c", 512, 512)]
    + [("stft-c2r", "c2r", 400, 512), ("stft-c2r", "c2r", 512, 512)]
)


def load_shapes(path):
    try:
        with open(path) as f:
            return [(s["name"], s["kind"], int(s["n"]), int(s["batch"])) for s in json.load(f)["shapes"]]
    except OSError:
        return list(FALLBACK_SHAPES)


def stats(per_call):
    v = sorted(per_call)

    def q(p):
        return v[round((len(v) - 1) * p)]

    return {
        "median_us": q(0.5),
        "p10_us": q(0.1),
        "p90_us": q(0.9),
        "mean_us": statistics.fmean(v),
        "min_us": v[0],
        "samples": len(v),
    }


def measure(calls, sync, warmup, cycles):
    """Per-call microseconds of each measured cycle of `calls` (one function per shape)."""
    out = []
    for c in range(warmup + cycles):
        t = time.perf_counter()
        for f in calls:
            f()
        sync()
        dt = time.perf_counter() - t
        if c >= warmup:
            out.append(dt * 1e6 / len(calls))
    return out


def bench_torch(shapes, sizes, args):
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        return {"skipped": f"cannot import torch: {e}"}
    if not torch.cuda.is_available():
        return {"skipped": "torch: no CUDA device"}
    dev = torch.device("cuda", 0)
    cache = torch.backends.cuda.cufft_plan_cache[0]
    calls, calls_out = [], []
    for _, kind, n, batch in shapes:
        if kind == "r2c":
            x = torch.randn(batch, n, device=dev, dtype=torch.float32)
            o = torch.empty(batch, n // 2 + 1, device=dev, dtype=torch.complex64)
            calls.append(lambda x=x: torch.fft.rfft(x))
            calls_out.append(lambda x=x, o=o: torch.fft.rfft(x, out=o))
        elif kind == "c2r":
            x = torch.randn(batch, n // 2 + 1, device=dev, dtype=torch.complex64)
            o = torch.empty(batch, n, device=dev, dtype=torch.float32)
            calls.append(lambda x=x, n=n: torch.fft.irfft(x, n=n))
            calls_out.append(lambda x=x, n=n, o=o: torch.fft.irfft(x, n=n, out=o))
        elif kind == "c2c":
            x = torch.randn(batch, n, device=dev, dtype=torch.complex64)
            o = torch.empty(batch, n, device=dev, dtype=torch.complex64)
            calls.append(lambda x=x: torch.fft.fft(x))
            calls_out.append(lambda x=x, o=o: torch.fft.fft(x, out=o))
        else:
            raise SystemExit(f"unknown kind {kind!r}")
    sync = torch.cuda.synchronize
    runs = []
    for size in sizes:
        for label, fs in (("torch.fft", calls), ("torch.fft out=", calls_out)):
            cache.clear()
            cache.max_size = size
            hit = size >= len(shapes)
            v = measure(fs, sync, args.warmup if hit else min(args.warmup, 3), args.cycles if hit else args.miss_cycles)
            runs.append({"framework": label, "cache_size": size, "per_call": stats(v), "cached_plans_after": cache.size})
    cache.clear()
    return {
        "version": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0),
        "runs": runs,
    }


def bench_cupy(shapes, sizes, args):
    try:
        import cupy
        import cupy.fft
    except Exception as e:  # noqa: BLE001
        return {"skipped": f"cannot import cupy: {e}"}
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return {"skipped": "cupy: no CUDA device"}
    except Exception as e:  # noqa: BLE001
        return {"skipped": f"cupy: no CUDA device: {e}"}
    rng = cupy.random.default_rng(0)
    calls = []
    for _, kind, n, batch in shapes:
        if kind == "r2c":
            x = rng.standard_normal((batch, n), dtype=cupy.float32)
            calls.append(lambda x=x: cupy.fft.rfft(x))
        elif kind == "c2r":
            x = (rng.standard_normal((batch, n // 2 + 1), dtype=cupy.float32)).astype(cupy.complex64)
            calls.append(lambda x=x, n=n: cupy.fft.irfft(x, n=n))
        elif kind == "c2c":
            x = (rng.standard_normal((batch, n), dtype=cupy.float32)).astype(cupy.complex64)
            calls.append(lambda x=x: cupy.fft.fft(x))
        else:
            raise SystemExit(f"unknown kind {kind!r}")
    cache = cupy.fft.config.get_plan_cache()

    def sync():
        cupy.cuda.get_current_stream().synchronize()

    runs = []
    for size in sizes:
        cache.clear()
        cache.set_size(size)
        hit = size >= len(shapes)
        v = measure(calls, sync, args.warmup if hit else min(args.warmup, 3), args.cycles if hit else args.miss_cycles)
        runs.append({"framework": "cupy.fft", "cache_size": size, "per_call": stats(v), "cached_plans_after": cache.get_curr_size()})
    cache.clear()
    try:
        name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # noqa: BLE001
        name = "?"
    return {"version": cupy.__version__, "device": name, "runs": runs}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="write every number here")
    p.add_argument("--cycles", type=int, default=1000, help="measured cycles at cache size 128 (default 1000)")
    p.add_argument("--miss-cycles", type=int, default=50, help="measured cycles at cache size 8 (default 50)")
    p.add_argument("--warmup", type=int, default=20, help="cycles run first and discarded (default 20)")
    p.add_argument("--shapes", default=SHAPES_JSON, help="probe shape file (default data/probe-shapes.json)")
    args = p.parse_args()

    shapes = load_shapes(args.shapes)
    sizes = (8, 128)
    doc = {
        "program": "torch_cupy_bench",
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "python": sys.version.split()[0],
        "shapes": len(shapes),
        "method": "per call = wall time of one cycle of the shapes (one call each, synchronized at the cycle's end) / number of shapes; median over cycles after warm-up",
        "torch": bench_torch(shapes, sizes, args),
        "cupy": bench_cupy(shapes, sizes, args),
    }

    print(f"\nPer call over the {len(shapes)}-shape cycle (median of per-cycle means), us")
    print(f"{'framework':<18} {'cache':>6} {'median':>9} {'p10':>9} {'p90':>9}")
    for fw in ("torch", "cupy"):
        r = doc[fw]
        if "skipped" in r:
            print(f"{fw:<18} skipped: {r['skipped']}")
            continue
        for run in r["runs"]:
            s = run["per_call"]
            print(f"{run['framework']:<18} {run['cache_size']:>6} {s['median_us']:>9.2f} {s['p10_us']:>9.2f} {s['p90_us']:>9.2f}")
    for fw in ("torch", "cupy"):
        r = doc[fw]
        if "skipped" not in r:
            print(f"{fw} {r['version']} on {r['device']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        print(f"wrote {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
