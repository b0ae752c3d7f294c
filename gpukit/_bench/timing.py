"""Fair timing of one callable on a small shared machine (see DESIGN.md).

BLAS and PyTorch thread pools spin for ~0.1 s after a call and steal cores from
whoever runs next, so each timed block starts after an idle pause, and the figure is
the median of the blocks. Device work is synchronised before the clock is read.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    """How long to time: ``block`` seconds per block, ``repeats`` blocks, ``idle`` before each."""

    block: float
    repeats: int
    idle: float
    cap: float = float("inf")  # stop adding blocks (keeping at least one) after this long


QUICK = Budget(block=0.02, repeats=3, idle=0.03, cap=0.3)
FULL = Budget(block=0.1, repeats=5, idle=0.15)


def measure(
    fn: Callable[[], object], sync: Callable[[], None], budget: Budget, best: bool = False
) -> float:
    """Median (``best``: least) seconds per call of ``fn``, after one calibrating warm-up call.

    ``best`` is for ceilings, which should be what the hardware does at its best.
    """
    t0 = time.perf_counter()
    fn()  # warm-up: plans, caches, kernel compilation, pool start-up
    sync()
    first = time.perf_counter() - t0
    number = max(1, int(budget.block / max(first, 1e-7)))
    blocks: list[float] = []
    start = time.perf_counter()
    for _ in range(budget.repeats):
        if blocks and time.perf_counter() - start > budget.cap:
            break
        time.sleep(budget.idle)
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        blocks.append((time.perf_counter() - t0) / number)
    return min(blocks) if best else statistics.median(blocks)
