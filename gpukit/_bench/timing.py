"""Fair timing of callables on a small shared machine (see DESIGN.md).

BLAS and PyTorch thread pools spin for ~0.1 s after a call and steal cores from
whoever runs next, so each timed block starts after an idle pause, and the
implementations compared take turns block by block (see ``run``), so that a
disturbance lands on all of them rather than on one. A figure is the median of its
blocks, reported with their spread and judged by pyperf's stability rules. Device
work is synchronised before the clock is read.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: pyperf's rules for a result that "may be unstable": the standard deviation of the
#: samples above 10% of their mean, or the smallest or largest 50% or more off the mean.
UNSTABLE_STDEV = 0.10
UNSTABLE_EXTREME = 0.50

#: blocks each implementation gets at least, whatever the time cap: a spread needs several
MIN_ROUNDS = 3


@dataclass(frozen=True)
class Budget:
    """How long to time: ``block`` s per block, ``rounds`` blocks each, ``idle`` s before each."""

    block: float
    rounds: int
    idle: float
    cap: float = float("inf")  # stop adding rounds (after MIN_ROUNDS) after this long


QUICK = Budget(block=0.02, rounds=5, idle=0.03, cap=1.0)
FULL = Budget(block=0.1, rounds=7, idle=0.15)


@dataclass(frozen=True)
class Spread:
    """Samples (seconds per call, or ratios) summarised as pyperf would judge them.

    Attributes
    ----------
    median : float
        The figure reported.
    low, high : float
        The smallest and largest sample.
    rel_stdev : float
        Standard deviation over the mean (0 for a single sample).
    n : int
        How many samples.
    unstable : bool
        The spread breaks one of pyperf's rules (:data:`UNSTABLE_STDEV`,
        :data:`UNSTABLE_EXTREME`): the figure says more about the machine's load than
        about the code.
    """

    median: float
    low: float
    high: float
    rel_stdev: float
    n: int
    unstable: bool


def spread(samples: Sequence[float]) -> Spread:
    """Median, range and relative standard deviation of ``samples``, and whether it is unstable."""
    if not samples:
        raise ValueError("spread of no samples")
    mean = statistics.fmean(samples)
    rel = statistics.stdev(samples) / mean if len(samples) > 1 and mean > 0 else 0.0
    low, high = min(samples), max(samples)
    extreme = max(mean - low, high - mean) / mean if mean > 0 else 0.0
    return Spread(
        median=statistics.median(samples),
        low=low,
        high=high,
        rel_stdev=rel,
        n=len(samples),
        unstable=rel > UNSTABLE_STDEV or extreme >= UNSTABLE_EXTREME,
    )


def calibrate(fn: Callable[[], object], sync: Callable[[], None], budget: Budget) -> int:
    """Calls per block of ``fn``, from one warm-up call (plans, caches, compilation, pools)."""
    t0 = time.perf_counter()
    fn()
    sync()
    first = time.perf_counter() - t0
    return max(1, int(budget.block / max(first, 1e-7)))


def time_block(
    fn: Callable[[], object], sync: Callable[[], None], number: int, idle: float
) -> float:
    """Seconds per call of ``number`` calls of ``fn``, after ``idle`` s for other pools to stop."""
    time.sleep(idle)
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    sync()
    return (time.perf_counter() - t0) / number


def measure(fn: Callable[[], object], sync: Callable[[], None], budget: Budget) -> float:
    """Least seconds per call of ``fn`` over ``budget.rounds`` blocks: a ceiling's figure.

    A ceiling is what the hardware does at its best, so the least-disturbed block counts.
    """
    number = calibrate(fn, sync, budget)
    blocks: list[float] = []
    start = time.perf_counter()
    while len(blocks) < budget.rounds and (
        len(blocks) < MIN_ROUNDS or time.perf_counter() - start <= budget.cap
    ):
        blocks.append(time_block(fn, sync, number, budget.idle))
    return min(blocks)
