# D1 (read + write) line misses per transform of the mlx_pattern bench, by function, from a cachegrind output file:
# python3 cg-misses.py CG_OUT TRANSFORMS [TOP]
import sys, collections
# D1 misses (read + write) per transform, by function, outside the bench's eviction sweep
f = open(sys.argv[1]); n = int(sys.argv[2]); ev = None; fl = fn = ""
tot = collections.Counter()
for line in f:
    if line.startswith("events:"): ev = line.split()[1:]; continue
    if line.startswith("fl="): fl = line[3:].strip(); continue
    if line.startswith("fn="): fn = line[3:].strip(); continue
    if not line[:1].isdigit(): continue
    p = line.split(); vals = dict(zip(ev, map(int, p[1:])))
    if "iterator.rs" in fl and fn.startswith("mlx_pattern::main"): continue
    tot[fn.split("::")[-1] if False else fn] += vals.get("D1mr",0) + vals.get("D1mw",0)
s = sum(tot.values())
print(f"{s/n:.1f} D1 line misses per transform (outside the sweep)")
mine = sum(v for k, v in tot.items() if "hipfft_pool" in k or "memcpy" in k)
print(f"{mine/n:.1f} of them in the interposer and the pool (functions named hipfft_pool*, and memcpy, which only they call on this path)")
for k, v in tot.most_common(int(sys.argv[3]) if len(sys.argv) > 3 else 0): print(f"{v/n:6.2f} {k[:110]}")
