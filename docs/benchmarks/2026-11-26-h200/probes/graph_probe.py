"""Probe: where a GraphedStep's and a cg iteration's host time goes on a GPU."""

import cProfile
import io
import pstats
import sys
import time

sys.path.insert(0, ".")
from asv_bench import gpu_cost

gk = gpu_cost._gk()
for name, k in (("mlp_graph_step", 50), ("mlp_step", 50), ("cg", 60)):
    run, unit = gpu_cost.WORKLOADS[name](gk)
    run(k)
    gk.synchronize()
    t0 = time.perf_counter()
    run(k)
    gk.synchronize()
    t = (time.perf_counter() - t0) / k
    pr = cProfile.Profile()
    pr.enable()
    run(k)
    gk.synchronize()
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(25)
    print(
        f"==== {name}: {t * 1e6:.1f} us per {unit} (unprofiled)\n"
        + "\n".join(s.getvalue().splitlines()[4:34]),
        flush=True,
    )
