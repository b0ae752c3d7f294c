"""Measure what the host kernels' split thresholds are derived from (issue 32).

Prints, for gpukit's compiled bias + activation kernels (gpukit/_host/native.py):

1. the single-thread time per element of each activation, forward and backward, in
   float32 and float64, and its ratio to the float32 identity forward (the memory-bound
   pass :data:`gpukit._host.parallel.PARALLEL_MIN` was set for);
2. the cost of handing one span to the host pool (``parallel.run`` of an empty span on
   two threads, less the same on one);
3. one thread against two through ``native.bias_act``/``bias_act_grad`` at sizes around
   the thresholds, in the same run (``threadpoolctl`` limits BLAS, and the host threads
   with it, to one).

Medians of many interleaved repetitions; run it on a quiet machine for figures to quote
(``uptime`` is printed before and after).

    python -m tools.host_split_costs [--reps 400]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

from gpukit._host import native, parallel


def _median_us(fn, reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def _direct(act: str, dtype, n: int, backward: bool, cols: int = 256):
    """One call of the C kernel over n elements (rows of ``cols``) on this thread, no
    pool; the backward with the bias gradient's sums (the identity's: the sums alone,
    ``grad_y`` given as the output too, as gk.kernels passes ``grad_y`` through)."""
    rng = np.random.default_rng(0)
    rows = n // cols
    x = (rng.standard_normal((rows, cols)) * 2).astype(dtype)
    g, y = np.ones_like(x), np.empty_like(x)
    b = np.zeros(cols, dtype)
    code, d = native.ACTIVATIONS.index(act), np.dtype(dtype)
    if backward:
        fn = native._fn("gk_bias_act_grad", d)
        out = g if act == "identity" else y
        keep = (g, x, b, out, np.zeros(cols), np.empty(cols, dtype))  # alive with the closure
        args = [native.address(a) for a in keep]
        return lambda: fn(*args, rows, cols, cols, code, 0.2, 0) if keep else None
    fn = native._fn("gk_bias_act", d)
    keep = (x, b, y)
    args = [native.address(a) for a in keep]
    return lambda: fn(*args, rows, cols, cols, code, 0.2) if keep else None


def per_element(reps: int, n: int = 1 << 16) -> dict:
    out = {}
    for dtype in (np.float32, np.float64):
        for backward in (False, True):
            for act in native.ACTIVATIONS:
                out[act, backward, np.dtype(dtype).name] = (
                    _median_us(_direct(act, dtype, n, backward), reps) * 1e3 / n
                )
    return out


def handoff(reps: int) -> tuple[float, float]:
    def empty(_k: int, _lo: int, _hi: int) -> None:
        return None

    one = _median_us(lambda: parallel.run(empty, 2, threads=1), reps)
    two = _median_us(lambda: parallel.run(empty, 2, threads=2), reps)
    return one, two


def one_vs_two(act: str, backward: bool, shape: tuple[int, int], reps: int) -> tuple:
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape[1]).astype(np.float32)
    y = np.empty_like(x)
    if backward:
        out = x if act == "identity" else y  # the identity's backward: the sums alone

        def call():
            native.bias_act_grad(x, x, b, out, act, 0.2, False, True)
    else:

        def call():
            native.bias_act(x, b, y, act, 0.2)

    times = {1: [], 2: []}
    for _ in range(reps // 10):  # interleaved rounds: the load changes under both alike
        for t in (1, 2):
            with threadpool_limits(limits=t, user_api="blas"):
                times[t].append(_median_us(call, 10))
    return statistics.median(times[1]), statistics.median(times[2])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=400)
    reps = ap.parse_args().reps
    print("load before:", os.getloadavg())
    costs = per_element(reps)
    base = costs["identity", False, "float32"]
    print("\nns per element, one thread, 64K elements (weight: / float32 identity forward)")
    print(f"{'activation':12} {'dir':4} {'f32 ns':>8} {'w':>5} {'f64 ns':>8} {'w':>5}")
    for backward in (False, True):
        for act in native.ACTIVATIONS:
            f, d = costs[act, backward, "float32"], costs[act, backward, "float64"]
            print(f"{act:12} {'bwd' if backward else 'fwd':4} {f:8.3f} {f / base:5.1f} "
                  f"{d:8.3f} {d / base:5.1f}")  # fmt: skip
    one, two = handoff(reps * 5)
    print(f"\nparallel.run, empty spans: 1 thread {one:.1f} us, 2 threads {two:.1f} us "
          f"(hand-off {two - one:.1f} us)")  # fmt: skip
    least = native.thresholds()
    print("\nfewest elements split (native.thresholds()), float32 forward / backward:")
    print("  ".join(f"{a} {least[a, 'forward', 'float32']}/{least[a, 'backward', 'float32']}"
                    for a in native.ACTIVATIONS))  # fmt: skip
    print("\none thread against two (threadpoolctl), float32, us, median of rounds")
    pairs = (("gelu", False), ("gelu", True), ("silu", False), ("relu", False), ("identity", True))
    for act, backward in pairs:
        for shape in ((64, 256), (128, 256), (256, 256), (512, 256), (1024, 256), (8192, 256)):
            t1, t2 = one_vs_two(act, backward, shape, reps)
            print(f"{act:6} {'bwd' if backward else 'fwd'} {shape!s:12} {t1:8.1f} {t2:8.1f} "
                  f"{t1 / t2:5.2f}x")  # fmt: skip
    print("\nload after:", os.getloadavg())


if __name__ == "__main__":
    main()
