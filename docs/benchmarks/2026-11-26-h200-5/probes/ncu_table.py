import collections
import csv
import sys

rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows:
    sys.exit("no rows")
h = rows[0]
ki = h.index("Kernel Name")
vi = h.index("Metric Value")
ui = h.index("Metric Unit")
gi = h.index("Grid Size")
bi = h.index("Block Size")
agg = collections.defaultdict(list)
for r in rows[1:]:
    v = float(r[vi].replace(",", "")) / (1000 if r[ui] == "ns" else 1)
    agg[(r[ki][:60], r[gi], r[bi])].append(v)
for k, v in sorted(agg.items(), key=lambda kv: -sum(kv[1])):
    print(f"{len(v):3d} x {sum(v) / len(v):8.2f} us  grid {k[1]:>14s} block {k[2]:>12s}  {k[0]}")
print(
    f"total {sum(sum(v) for v in agg.values()):.1f} us over {sum(len(v) for v in agg.values())} kernels"
)
