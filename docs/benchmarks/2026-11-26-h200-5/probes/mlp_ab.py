"""One eager MLP step (asv_bench/gpu_cost.mlp_step) timed from the gpukit tree given as argv[1]:
interleaved lo/hi pairs, host clock around a device sync; prints median and quartiles in us."""

import sys
import time

root = sys.argv[1]
sys.path[:0] = [root, root + "/backends", root + "/asv_bench"]
import gpu_cost  # noqa: E402  (from the tree named above)

gk = gpu_cost._gk()
assert gk.__file__.startswith(root), gk.__file__
run, _ = gpu_cost.mlp_step(gk)
lo, hi = 2, 18
run(hi)
gk.synchronize()


def t(k):
    s = time.perf_counter()
    run(k)
    gk.synchronize()
    return time.perf_counter() - s


sl = sorted((t(hi) - t(lo)) / (hi - lo) * 1e6 for _ in range(15))
print(f"{sys.argv[2]:4s} mlp_step {sl[7]:8.1f} us  q {sl[3]:.1f}-{sl[11]:.1f}", flush=True)
