"""A Python program under a preloaded interposer on the simulated runtime, as a data loader or
multiprocessing pool lives: threads of the parent execute cuFFT plans (through ctypes, which
lets go of the GIL during each call), while the parent forks children that never call cuFFT
and leave with sys.exit(), and children that do. Each child must end within 5 s.

    python3 fork_exit.py CHILDREN

Prints "ok fork_exit.py: ..." or "FAIL ..." lines; exits 1 on any failure."""
import ctypes
import os
import signal
import sys
import threading
import time

lib = ctypes.CDLL(None)  # the preloaded interposer's cufft* functions
for name in ("cufftPlan1d", "cufftExecC2C", "cufftDestroy", "hfp_intercept_synchronize"):
    if not hasattr(lib, name):
        print(f"FAIL no {name} in the process (is the interposer preloaded?)")
        sys.exit(1)

C2C, FORWARD = 0x29, -1


def transform(n, seed):
    """One checked C2C transform of length n: bin 0 is the sum of the inputs."""
    h = ctypes.c_int()
    if lib.cufftPlan1d(ctypes.byref(h), n, C2C, 1) != 0:
        return "plan"
    buf = (ctypes.c_float * (2 * n))(*[float((k * 7 + seed) % 13 - 6) if k % 2 == 0 else 0.0 for k in range(2 * n)])
    want = sum(buf[0::2])
    try:
        if lib.cufftExecC2C(h, buf, buf, FORWARD) != 0:
            return "exec"
        lib.hfp_intercept_synchronize()
        return None if abs(buf[0] - want) <= 1e-3 * (abs(want) + 1) else "value"
    finally:
        lib.cufftDestroy(h)


stop = threading.Event()
errors = []


def busy(i):
    r = 0
    while not stop.is_set():
        e = transform(16 + (i * 3 + r) % 24, r)
        if e:
            errors.append(e)
        r += 1


def reap(pid, limit=5.0):
    """The child's exit status, or None if it had to be killed after `limit` seconds."""
    until = time.monotonic() + limit
    while time.monotonic() < until:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.001)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def main():
    children = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    threads = [threading.Thread(target=busy, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.05)
    hung = failed = 0
    slowest = 0.0
    for c in range(children):
        uses = c % 4 == 3  # every fourth child makes a plan of its own
        t0 = time.monotonic()
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            code = 0
            if uses and transform(40, c):
                code = 1
            sys.exit(code)  # Python's exit: atexit handlers, then the C library's
        status = reap(pid)
        slowest = max(slowest, time.monotonic() - t0)
        if status is None:
            hung += 1
        elif status != 0:
            failed += 1
    stop.set()
    for t in threads:
        t.join()
    print(f"fork_exit.py: {children} children, {hung} hung, {failed} failed, slowest {slowest * 1e3:.1f} ms, "
          f"{len(errors)} errors in the parent")
    ok = hung == 0 and failed == 0 and not errors
    print(("ok" if ok else "FAIL") + " fork_exit.py")
    sys.exit(0 if ok else 1)


main()
