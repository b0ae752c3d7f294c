"""Fair same-run timing of two callables on a small shared machine.

NumPy, SciPy and PyTorch each keep a thread pool, and OpenBLAS workers spin for
~0.1 s after a call, stealing cores from whoever runs next. So the two sides are
interleaved, each timed block starts after a short idle pause, and the result is
the median of the per-pair ratios (DESIGN.md, "Tests and benchmarks").
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Pair:
    """Median seconds per call of each side, the median per-pair ratio a/b and the
    quartiles of the per-pair ratios (how far the machine moved during the run)."""

    a_seconds: float
    b_seconds: float
    ratio: float
    quartiles: tuple[float, float] = (float("nan"), float("nan"))


def _block(fn: Callable[[], object], number: int, sync: Callable[[], None]) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    sync()
    return (time.perf_counter() - t0) / number


def _calibrate(fn: Callable[[], object], sync: Callable[[], None], target: float) -> int:
    number = 1
    while True:
        t = _block(fn, number, sync)
        if t * number >= target or number >= 1 << 20:
            return max(1, int(number * target / max(t * number, 1e-9)))
        number *= 4


def compare(
    a: Callable[[], object],
    b: Callable[[], object],
    *,
    repeats: int = 7,
    block: float = 0.05,
    idle: float = 0.15,
    sync: Callable[[], None] = lambda: None,
) -> Pair:
    """Time ``a`` against ``b``, interleaved, ``repeats`` pairs of ~``block`` s each."""
    a(), b()  # warm up: caches, plans, thread pools
    number = max(_calibrate(a, sync, block), _calibrate(b, sync, block))
    ta, tb, ratios = [], [], []
    for i in range(repeats):
        order = (a, b) if i % 2 == 0 else (b, a)
        got = {}
        for fn in order:
            time.sleep(idle)  # let the other side's pool go idle
            got[fn] = _block(fn, number, sync)
        ta.append(got[a])
        tb.append(got[b])
        ratios.append(got[a] / got[b])
    q1, _, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
    return Pair(statistics.median(ta), statistics.median(tb), statistics.median(ratios), (q1, q3))


def table(rows: list[tuple[str, Pair, str]]) -> str:
    """Format comparison rows ``(label, pair, target)`` as a plain-text table."""
    lines = [f"{'case':<48} {'gpukit':>11} {'peer':>11} {'ratio':>7} {'quartiles':>13}  target"]
    for label, p, target in rows:
        lines.append(
            f"{label:<48} {p.a_seconds * 1e3:>9.3f}ms {p.b_seconds * 1e3:>9.3f}ms "
            f"{p.ratio:>7.3f} {p.quartiles[0]:>6.3f}-{p.quartiles[1]:<6.3f}  {target}"
        )
    return "\n".join(lines)
