#!/usr/bin/env python3
# Statistics of alternated (native, interposed) MLX cycle pairs written by
# scripts/mlx-pairs-device.sh: python3 scripts/mlx-pair-stats.py DIR
import json, statistics as st, sys, glob, os
d = sys.argv[1]
val = {}
for f in glob.glob(os.path.join(d, "*-*.json")):
    b = os.path.basename(f)
    if "metrics" in b: continue
    who, i = b[:-5].split("-")
    val[(who, int(i))] = json.load(open(f))["us_per_call_median"]
ids = sorted(i for (w, i) in val if w == "native" and ("pool", i) in val)
nat = [val[("native", i)] for i in ids]; pool = [val[("pool", i)] for i in ids]
r = [p / n for n, p in zip(nat, pool)]
q = lambda v, f: sorted(v)[int(f * (len(v) - 1))]
print(f"{d}: {len(ids)} pairs (native, interposed), us per call = each process's median over its cycles")
print(f"  median of per-pair ratios {st.median(r):.3f}; mean {st.mean(r):.3f}")
for name, f in (("min", 0), ("p10", .1), ("p25", .25), ("median", .5)):
    print(f"  {name:>6}: native {q(nat, f):6.2f}  interposed {q(pool, f):6.2f}  ratio {q(pool, f) / q(nat, f):.3f}")
# The fast state alone (run 36: each process lands in a fast state, about 10.5 us per call on
# that H100, or a slow one, 13 to 20 us, natively and interposed alike): the processes under
# FAST_US on each side, the ratio of their medians. What the interposer adds to a call, with
# the state the process happened to land in taken out.
fast = float(os.environ.get("FAST_US", "12.5"))
fn = [x for x in nat if x < fast]; fp = [x for x in pool if x < fast]
if fn and fp:
    print(f"  fast state (under {fast} us): native {len(fn)} processes, median {st.median(fn):.2f}; "
          f"interposed {len(fp)}, median {st.median(fp):.2f}; ratio {st.median(fp) / st.median(fn):.3f}")
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
