"""Where gpukit's host time goes on real CuPy: per row, timed gk vs peer, then cProfile.

Session 14's probe (run13.sh): ``python3 gpuprof.py [ROW ...]`` from the checkout's root
with ``GPUKIT_BACKEND=cupy`` and the checkout on ``PYTHONPATH``.
"""

import cProfile
import io
import pstats
import sys
import timeit

import cupy

import gpukit as gk

sys.path.insert(0, "asv_bench")
import calls

gk.get_backend()  # resolved, as the benchmark's setup does
rows = {label: (a, b) for label, a, b in calls.rows(cupy)}
SELECTED = sys.argv[1:] or [
    "kernels.sgd_update 64",
    "kernels.adam_update 64",
    "kernels.softmax_cross_entropy 4x8",
    "optim.SGD step 64",
    "optim.Adam step 64",
    "fft.ifftn 4x4",
    "fft.ifft2 4x4",
    "fft.fft2 4x4",
    "fft.fft 16",
    "matmul 8x8 float32",
    "kernels.bias_activation_backward 4x8 relu",
    "fft.fft 16, NumPy input",
    "linalg.norm 1024",
    "to_numpy",
]
sync = cupy.cuda.Device().synchronize


def best(f, n=500):
    """The best of 7 blocks of ``n`` calls, in us per call."""
    times = []
    for _ in range(7):
        sync()
        times.append(timeit.timeit(f, number=n) / n)
    return min(times) * 1e6


for label in SELECTED:
    ours, peer = rows[label]
    for _ in range(300):
        ours()
        peer()
    t_ours = min(best(ours), best(ours))
    t_peer = min(best(peer), best(peer))
    print(f"### {label}: gk {t_ours:.2f} us, peer {t_peer:.2f} us, over {t_ours - t_peer:+.2f}")
    for f, who in ((ours, "gk"), (peer, "peer")):
        profile = cProfile.Profile()
        sync()
        profile.enable()
        for _ in range(2000):
            f()
        profile.disable()
        sync()
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(18)
        lines = [line for line in out.getvalue().splitlines() if line.strip()]
        print(f"-- cProfile {who}:")
        print("\n".join(lines[3:]))
