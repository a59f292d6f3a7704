#!/usr/bin/env python3
# Statistics of alternated (native, interposed) MLX cycle pairs written by
# scripts/mlx-pairs-device.sh: python3 scripts/mlx-pair-stats.py DIR [DIR...] (several runs
# pooled: pair i of the k-th folder is pair (k, i))
import json, statistics as st, sys, glob, os
d = " + ".join(sys.argv[1:])
val = {}
for k, folder in enumerate(sys.argv[1:]):
    for f in glob.glob(os.path.join(folder, "*-*.json")):
        b = os.path.basename(f)
        if "metrics" in b or "counts" in b: continue
        who, i = b[:-5].split("-")
        val[(who, (k, int(i)))] = json.load(open(f))["us_per_call_median"]
ids = sorted(i for (w, i) in val if w == "native" and ("pool", i) in val)
nat = [val[("native", i)] for i in ids]; pool = [val[("pool", i)] for i in ids]
r = [p / n for n, p in zip(nat, pool)]
q = lambda v, f: sorted(v)[int(f * (len(v) - 1))]
print(f"{d}: {len(ids)} pairs (native, interposed), us per call = each process's median over its cycles")
print(f"  median of per-pair ratios {st.median(r):.3f}; mean {st.mean(r):.3f}")
for name, f in (("min", 0), ("p10", .1), ("p25", .25), ("median", .5)):
    print(f"  {name:>6}: native {q(nat, f):6.2f}  interposed {q(pool, f):6.2f}  ratio {q(pool, f) / q(nat, f):.3f}")
# The fast state alone (docs/history/2026-12.md: each process lands in a fast state, about 10.5 us per call on
# that H100, or a slow one, 13 to 20 us, natively and interposed alike): the processes under
# FAST_US on each side, the ratio of their medians. What the interposer adds to a call, with
# the state the process happened to land in taken out.
fast = float(os.environ.get("FAST_US", "12.5"))
fn = [x for x in nat if x < fast]; fp = [x for x in pool if x < fast]
if fn and fp:
    print(f"  fast state (under {fast} us): native {len(fn)} processes, median {st.median(fn):.2f}; "
          f"interposed {len(fp)}, median {st.median(fp):.2f}; ratio {st.median(fp) / st.median(fn):.3f}")
sn = [x for x in nat if x >= fast]; sp = [x for x in pool if x >= fast]
if sn and sp:
    print(f"  slow state: native {len(sn)} processes, median {st.median(sn):.2f}; "
          f"interposed {len(sp)}, median {st.median(sp):.2f}; ratio {st.median(sp) / st.median(sn):.3f}")
# The Hodges-Lehmann estimate of the interposed/native ratio: the median of the log-ratios of
# every (interposed, native) pair of processes, not only those run side by side. Robust to
# the state each process lands in (a mixture on both sides), unlike a ratio of quantiles; the
# 90% interval is a bootstrap over processes (fixed seed, so a rerun prints the same).
import math, random
def hl(a, b):
    return math.exp(st.median([math.log(x / y) for x in a for y in b]))
est = hl(pool, nat)
rng = random.Random(1)
boots = sorted(hl([rng.choice(pool) for _ in pool], [rng.choice(nat) for _ in nat]) for _ in range(400))
print(f"  Hodges-Lehmann ratio {est:.3f} (90% bootstrap interval {boots[20]:.3f} to {boots[379]:.3f})")

# More arms (mlx-pairs-device.sh): `old`, another build of the interposer (HFP_OLD_LIB), and
# (HFP_FWD=1) `fwd`, the forward-only preload, and `empty`, a preload that defines nothing,
# each against native and against this build. A `fwd` process whose counts file is missing or
# counts no execution did not go through the preload, nor an `empty` one whose file does not
# name a python process: they are left out, and said.
def went_through(arm, k):
    f = os.path.join(sys.argv[1:][k[0]], f"{arm}-{k[1]}.counts.json")
    try:
        c = json.load(open(f))
    except (OSError, ValueError):
        return False
    return c.get("cufftXtExec", 0) > 0 if arm == "fwd" else c.get("process", "").startswith("python")
for arm, label in (("old", "old"), ("fwd", "forward-only preload"), ("empty", "empty preload")):
    keys = [k for (w, k) in val if w == arm]
    if arm in ("fwd", "empty"):
        bad = [k for k in keys if not went_through(arm, k)]
        if bad:
            print(f"  {len(bad)} {arm} processes left out: the preload did not serve them ({bad[:5]})")
        keys = [k for k in keys if k not in bad]
    other = [val[(arm, k)] for k in keys]
    if not other:
        continue
    for name, a, b in ((f"{label} / native", other, nat), (f"this build / {label}", pool, other)):
        bo = sorted(hl([rng.choice(a) for _ in a], [rng.choice(b) for _ in b]) for _ in range(400))
        print(f"  {name}: Hodges-Lehmann ratio {hl(a, b):.3f} (90% bootstrap interval {bo[20]:.3f} to {bo[379]:.3f}), {len(other)} {arm} processes")

# The interposer's own host time under MLX (HFP_HOST_PROFILE=1 in mlx-pairs-device.sh): per
# arm, per export, the median over processes of the own (outside the real libraries) ns per
# call, and the three per-transform exports' sum against that process's us per call.
for who in ("pool", "old"):
    prof = {}
    for k, folder in enumerate(sys.argv[1:]):
        for f in glob.glob(os.path.join(folder, who + "-*.metrics.json")):
            hp = json.load(open(f)).get("host_profile")
            i = int(os.path.basename(f).split("-")[1].split(".")[0])
            if hp and (who, (k, i)) in val:
                prof[(k, i)] = (hp, val[(who, (k, i))])
    if not prof:
        continue
    names = sorted({n for hp, _ in prof.values() for n in hp if not n.startswith("library:")})
    print(f"  host profile, {who}: {len(prof)} processes, median own ns per call (median library ns)")
    for n in names:
        own = [hp[n]["own_ns_per_call"] for hp, _ in prof.values() if n in hp]
        lib = [hp[n]["library_ns_per_call"] for hp, _ in prof.values() if n in hp]
        calls = [hp[n]["calls"] for hp, _ in prof.values() if n in hp]
        print(f"    {n:<22} own {st.median(own):7.1f}  library {st.median(lib):7.1f}  calls {st.median(calls):.0f}")
    per = ("cufftSetStream", "cufftSetWorkArea", "cufftXtExec")
    shares = []
    for hp, us in prof.values():
        if all(n in hp for n in per):
            execs = hp["cufftXtExec"]["calls"]
            own = sum(hp[n]["own_ns_per_call"] * hp[n]["calls"] for n in per) / execs
            shares.append((own, own / (us * 1000)))
    if shares:
        print(f"    own ns per transform (the three exports): median {st.median(s for s, _ in shares):.0f}, "
              f"{100 * st.median(f for _, f in shares):.1f}% of the process's us per call (profiled: the clock reads add to both)")
