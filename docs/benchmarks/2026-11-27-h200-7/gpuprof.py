"""Where gpukit's host time goes on real CuPy: per row, timed gk vs peer, then cProfile."""
import cProfile, io, pstats, sys, timeit
import numpy as np, cupy
import gpukit as gk
sys.path.insert(0, "asv_bench")
import calls
gk.get_backend()  # resolved, as the benchmark's setup does
rows = {label: (a, b) for label, a, b in calls.rows(cupy)}
SEL = sys.argv[1:] or [
    "kernels.sgd_update 64", "kernels.adam_update 64", "kernels.softmax_cross_entropy 4x8",
    "optim.SGD step 64", "optim.Adam step 64", "fft.ifftn 4x4", "fft.ifft2 4x4", "fft.fft2 4x4",
    "fft.fft 16", "matmul 8x8 float32", "kernels.bias_activation_backward 4x8 relu",
    "fft.fft 16, NumPy input", "linalg.norm 1024", "to_numpy",
]
sync = cupy.cuda.Device().synchronize
def t(f, n=500):
    best = []
    for _ in range(7):
        sync(); best.append(timeit.timeit(f, number=n) / n)
    return min(best) * 1e6
for label in SEL:
    a, b = rows[label]
    for _ in range(300): a(); b()
    ta, tb, ta2, tb2 = t(a), t(b), t(a), t(b)
    print(f"### {label}: gk {min(ta,ta2):.2f} us, peer {min(tb,tb2):.2f} us, over {min(ta,ta2)-min(tb,tb2):+.2f}")
    for f, who in ((a, "gk"), (b, "peer")):
        pr = cProfile.Profile(); sync(); pr.enable()
        for _ in range(2000): f()
        pr.disable(); sync()
        s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(18)
        lines = [l for l in s.getvalue().splitlines() if l.strip()]
        print(f"-- cProfile {who}:"); print("\n".join(lines[3:]))
