#!/usr/bin/env python3
"""A faithful subset of CuPy's tests/cupy_tests/fft_tests/ (test_fft.py, test_cache.py).

Each class name is the upstream test class it follows; each runs that class's parameter grid
with the upstream check, `numpy_cupy_allclose(rtol=1e-4, atol=1e-7, accept_error=ValueError)`:
the same call on NumPy and CuPy must both raise ValueError, or agree within the tolerance
(NumPy's complex128 output cast to complex64 for single-precision inputs). The upstream files
need CuPy's pytest plugins and decorators (cupy.testing's for_all_dtypes, parameterize), whose
signatures change between versions; this runner needs only cupy and numpy.

    python3 cupy_fft_subset.py [--json PATH]
"""

import argparse
import itertools
import json
import sys
import time
import traceback

import numpy as np
import cupy
from cupy.fft import config

DTYPES = (np.float32, np.float64, np.complex64, np.complex128, np.int32)
RESULTS = []


def shaped_random(shape, xp, dtype, seed=0):
    r = np.random.RandomState(seed)
    if np.dtype(dtype).kind == "c":
        a = r.rand(*shape) * 10 + 1j * r.rand(*shape) * 10
    elif np.dtype(dtype).kind in "iu":
        a = r.randint(0, 10, size=shape)
    else:
        a = r.rand(*shape) * 10
    return xp.asarray(a.astype(dtype))


def allclose(name, f, dtype, rtol=1e-4, atol=1e-7):
    """numpy_cupy_allclose: run f(xp) on both, compare."""
    errs = []
    outs = []
    for xp in (np, cupy):
        try:
            outs.append(f(xp))
            errs.append(None)
        except ValueError as e:
            outs.append(None)
            errs.append(e)
    if errs[0] is not None or errs[1] is not None:
        if errs[0] is None or errs[1] is None:
            raise AssertionError(f"{name}: only {'numpy' if errs[0] else 'cupy'} raised: {errs[0] or errs[1]}")
        return
    n, c = outs
    if np.dtype(dtype) in (np.float16, np.float32, np.complex64) and n.dtype == np.complex128:
        n = n.astype(np.complex64)
    if np.dtype(dtype) in (np.float16, np.float32, np.complex64) and n.dtype == np.float64:
        n = n.astype(np.float32)
    np.testing.assert_allclose(cupy.asnumpy(c), n, rtol=rtol, atol=atol, err_msg=name)


def case(name):
    def deco(f):
        def run():
            t0 = time.perf_counter()
            count = 0
            try:
                count = f()
                RESULTS.append((name, True, ""))
                print(f"PASS {name}: {count} cases ({time.perf_counter() - t0:.2f} s)", flush=True)
            except Exception as e:  # noqa: BLE001
                why = f"{type(e).__name__}: {str(e)[:300]}"
                RESULTS.append((name, False, why))
                print(f"FAIL {name}: {why}", flush=True)
                traceback.print_exc(limit=3)
        return run
    return deco


def nd_planning(body):
    """nd_planning_states(): run with config.enable_nd_planning True and False."""
    saved = config.enable_nd_planning
    try:
        n = 0
        for state in (True, False):
            config.enable_nd_planning = state
            n += body()
        return n
    finally:
        config.enable_nd_planning = saved


FFT2_PARAMS = [
    ((3, 4), None, None, None), ((3, 4), (1, None), None, None), ((3, 4), (1, 5), None, None),
    ((3, 4), None, (-2, -1), None), ((3, 4), None, (-1, -2), None), ((3, 4), None, (0,), None),
    ((3, 4), None, None, "ortho"), ((2, 3, 4), None, None, None), ((2, 3, 4), (1, 4, None), None, None),
    ((2, 3, 4), (1, 4, 10), None, None), ((2, 3, 4), None, (-3, -2, -1), None), ((2, 3, 4), None, (-1, -2, -3), None),
    ((2, 3, 4), None, (0, 1), None), ((2, 3, 4), None, None, "ortho"), ((2, 3, 4), (2, 3), (0, 1, 2), "ortho"),
    ((2, 3, 4, 5), None, None, None),
]
FFTN_PARAMS = FFT2_PARAMS + [((2, 3, 4), None, (-1, -3), None), ((2, 3, 4), (4, 3, 2), (2, 0, 1), "ortho")]


def grid_1d(xpfn, names, ns, shapes, norms, dtypes=DTYPES):
    count = 0
    for fname, n, shape, norm, dtype in itertools.product(names, ns, shapes, norms, dtypes):
        def f(xp):
            a = shaped_random(shape, xp, dtype)
            return getattr(xp.fft, fname)(a, n=n, norm=norm)
        allclose(f"{fname} n={n} shape={shape} norm={norm} {np.dtype(dtype)}", f, dtype)
        count += 1
    return count


def tests():
    out = []

    @case("TestFft (fft, ifft)")
    def t():
        return grid_1d(None, ("fft", "ifft"), (None, 0, 5, 10, 15), ((10,), (10, 10)), (None, "ortho", ""))
    out.append(t)

    @case("TestFftOrder (fft, ifft by axis, C and F order)")
    def t():
        count = 0
        for fname, shape, order, axis, dtype in itertools.product(("fft", "ifft"), ((10, 10), (10, 5, 10)), "FC", (0, 1, -1), DTYPES):
            def f(xp):
                a = shaped_random(shape, xp, dtype)
                if order == "F":
                    a = xp.asfortranarray(a)
                return getattr(xp.fft, fname)(a, axis=axis)
            allclose(f"{fname} {shape} {order} axis={axis}", f, dtype)
            count += 1
        return count
    out.append(t)

    for cls, names, params in (("TestFft2 (fft2, ifft2)", ("fft2", "ifft2"), FFT2_PARAMS),
                               ("TestFftn (fftn, ifftn)", ("fftn", "ifftn"), FFTN_PARAMS)):
        @case(cls)
        def t(names=names, params=params):
            def body():
                count = 0
                for fname, (shape, s, axes, norm), dtype in itertools.product(names, params, DTYPES):
                    def f(xp):
                        a = shaped_random(shape, xp, dtype)
                        if fname.endswith("2"):
                            return getattr(xp.fft, fname)(a, s=s, norm=norm)
                        return getattr(xp.fft, fname)(a, s=s, axes=axes, norm=norm)
                    allclose(f"{fname} {shape} s={s} axes={axes} norm={norm}", f, dtype)
                    count += 1
                return count
            return nd_planning(body)
        out.append(t)

    @case("TestPlanCtxManagerFftn (get_fft_plan as a context)")
    def t():
        from cupyx.scipy.fftpack import get_fft_plan

        def body():
            count = 0
            for fname, (shape, s, axes, norm), dtype in itertools.product(("fftn", "ifftn"), FFT2_PARAMS[:7] + FFT2_PARAMS[7:14],
                                                                          (np.complex64, np.complex128)):
                def f(xp):
                    a = shaped_random(shape, xp, dtype)
                    if xp is cupy:
                        with get_fft_plan(a, s, axes):
                            return getattr(xp.fft, fname)(a, s=s, axes=axes, norm=norm)
                    return getattr(xp.fft, fname)(a, s=s, axes=axes, norm=norm)
                allclose(f"{fname} plan {shape} s={s} axes={axes}", f, dtype)
                count += 1
            return count
        return nd_planning(body)
    out.append(t)

    @case("TestPlanCtxManagerFft (Plan1d as a context)")
    def t():
        from cupyx.scipy.fftpack import get_fft_plan
        count = 0
        for fname, n, norm, dtype in itertools.product(("fft", "ifft"), (None, 5, 10, 15), (None, "ortho"), (np.complex64, np.complex128)):
            def f(xp):
                a = shaped_random((10,), xp, dtype)
                if xp is cupy:
                    plan = get_fft_plan(a, shape=(n,) if n else None)
                    assert isinstance(plan, cupy.cuda.cufft.Plan1d)
                    with plan:
                        return getattr(xp.fft, fname)(a, n=n, norm=norm)
                return getattr(xp.fft, fname)(a, n=n, norm=norm)
            allclose(f"{fname} plan n={n}", f, dtype)
            count += 1
        return count
    out.append(t)

    @case("TestRfft (rfft, irfft)")
    def t():
        # upstream: rfft for_all_dtypes(no_complex=True), irfft for_all_dtypes()
        return (grid_1d(None, ("rfft",), (None, 5, 10, 15), ((10,), (10, 10)), (None, "ortho"), (np.float32, np.float64, np.int32))
                + grid_1d(None, ("irfft",), (None, 5, 10, 15), ((10,), (10, 10)), (None, "ortho")))
    out.append(t)

    for cls, names in (("TestRfft2 (rfft2, irfft2)", ("rfft2", "irfft2")), ("TestRfftn (rfftn, irfftn)", ("rfftn", "irfftn"))):
        @case(cls)
        def t(names=names):
            def body():
                count = 0
                for fname, (shape, s, axes, norm), dtype in itertools.product(names, FFT2_PARAMS, (np.float32, np.float64, np.complex64, np.complex128)):
                    if fname.startswith("rfft") and np.dtype(dtype).kind == "c":
                        continue
                    def f(xp):
                        a = shaped_random(shape, xp, dtype)
                        if fname.endswith("2"):
                            return getattr(xp.fft, fname)(a, s=s, norm=norm)
                        return getattr(xp.fft, fname)(a, s=s, axes=axes, norm=norm)
                    allclose(f"{fname} {shape} s={s} axes={axes} norm={norm}", f, dtype)
                    count += 1
                return count
            return nd_planning(body)
        out.append(t)

    @case("TestHfft (hfft, ihfft)")
    def t():
        # upstream: hfft for_all_dtypes(), ihfft for_all_dtypes(no_complex=True)
        return (grid_1d(None, ("hfft",), (None, 5, 10, 15), ((10,), (10, 10)), (None, "ortho"))
                + grid_1d(None, ("ihfft",), (None, 5, 10, 15), ((10,), (10, 10)), (None, "ortho"), (np.float32, np.float64, np.int32)))
    out.append(t)

    @case("test_cache.TestPlanCache (LRU of plans: eviction destroys handles)")
    def t():
        cache = config.get_plan_cache()
        saved = cache.get_size()
        try:
            cache.clear()
            cache.set_size(2)
            count = 0
            for n in range(8, 40):
                a = shaped_random((4, n), cupy, np.complex64)
                np.testing.assert_allclose(cupy.asnumpy(cupy.fft.fft(a)), np.fft.fft(cupy.asnumpy(a)).astype(np.complex64),
                                           rtol=1e-4, atol=1e-4)
                assert cache.get_curr_size() <= 2, cache.get_curr_size()
                count += 1
            cache.set_size(0)
            cupy.fft.fft(shaped_random((4, 16), cupy, np.complex64))
            assert cache.get_curr_size() == 0
            return count
        finally:
            cache.set_size(saved)
            cache.clear()
    out.append(t)

    @case("TestMultipleStreams (a plan per stream)")
    def t():
        streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(4)]
        res = []
        for i, s in enumerate(streams):
            with s:
                a = shaped_random((32, 200 + i), cupy, np.complex64, seed=i)
                res.append((a, cupy.fft.fft(a)))
        cupy.cuda.Device().synchronize()
        for a, r in res:
            np.testing.assert_allclose(cupy.asnumpy(r), np.fft.fft(cupy.asnumpy(a)).astype(np.complex64), rtol=1e-4, atol=1e-3)
        return len(res)
    out.append(t)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    a = ap.parse_args()
    t0 = time.perf_counter()
    for t in tests():
        t()
    cupy.cuda.Device().synchronize()
    passed = sum(ok for _, ok, _ in RESULTS)
    summary = {"framework": "cupy", "version": cupy.__version__, "passed": passed, "failed": len(RESULTS) - passed,
               "seconds": round(time.perf_counter() - t0, 2), "failures": [(n, w) for n, ok, w in RESULTS if not ok]}
    print("SUMMARY " + json.dumps(summary), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summary, f)
    return 0 if passed == len(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
