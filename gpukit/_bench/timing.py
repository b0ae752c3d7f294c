"""Fair timing of callables on a small shared machine (see DESIGN.md).

BLAS and PyTorch thread pools spin for ~0.1 s after a call and steal cores from
whoever runs next, so each timed block starts after an idle pause, and the
implementations compared take turns block by block (``run`` for ``gpukit bench``,
:func:`compare` for a pair: the asv suite's ``track_ratio`` benchmarks and
``python -m tools.peers``), so that a disturbance lands on all of them rather than on
one. A figure is the median of its blocks, a ratio the median of the per-pair ratios,
reported with their spread and judged by pyperf's stability rules. Device work is
synchronised before the clock is read.
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
    """Calls per block of ``fn``, from a warm call: the first one (plans, caches,
    compilation, pools) is untimed. Sized from a cold call, a block of a call that is cold
    once per block (gpukit's plans go when a runner's backend scope is entered) held one
    or two calls and the blocks timed mostly cold calls (the likely reason ``gk.fft.fft2``
    of 8x128x128 read 0.3-0.4 ms in the H200 lane's quick benchmark against 45 us in a
    probe)."""
    fn()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    warm = time.perf_counter() - t0
    return max(1, int(budget.block / max(warm, 1e-7)))


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


@dataclass(frozen=True)
class Pair:
    """Two callables timed against each other, interleaved (:func:`compare`).

    Attributes
    ----------
    a_seconds, b_seconds : float
        Median seconds per call of each side.
    ratios : tuple of float
        ``a / b`` of every pair of blocks, in the order they ran.
    """

    a_seconds: float
    b_seconds: float
    ratios: tuple[float, ...]

    @property
    def ratio(self) -> float:
        """The median per-pair ratio ``a / b``: the figure reported."""
        return statistics.median(self.ratios)

    @property
    def quartiles(self) -> tuple[float, float]:
        """First and third quartiles of the per-pair ratios: how far the machine moved."""
        if len(self.ratios) < 2:
            return self.ratio, self.ratio
        q1, _, q3 = statistics.quantiles(self.ratios, n=4, method="inclusive")
        return q1, q3

    @property
    def unstable(self) -> bool:
        """The per-pair ratios break pyperf's stability rules (:func:`spread`)."""
        return spread(self.ratios).unstable


def compare(
    a: Callable[[], object],
    b: Callable[[], object],
    *,
    pairs: int = 7,
    block: float = 0.05,
    idle: float = 0.15,
    sync: Callable[[], None] = lambda: None,
) -> Pair:
    """Time ``a`` against ``b``: ``pairs`` pairs of blocks of ~``block`` s, interleaved.

    Both sides get the same number of calls per block (enough for the slower one to
    fill ``block``), the order alternates pair by pair, and each block starts after
    ``idle`` s so the other side's thread pool has stopped spinning.

    Parameters
    ----------
    a, b : callable
        Zero-argument calls; ``a`` is gpukit's side by convention (ratio = a / b).
    pairs : int
        Blocks per side.
    block : float
        Seconds a block lasts at least (one call where a call takes longer).
    idle : float
        Seconds of pause before each block.
    sync : callable
        Waits for queued device work; called at the end of each block.

    Returns
    -------
    Pair
        Median seconds per call of each side and the per-pair ratios.

    Examples
    --------
    >>> p = compare(lambda: sum(range(100)), lambda: sum(range(200)), pairs=3, block=1e-3,
    ...             idle=0.0)
    >>> len(p.ratios), p.ratio > 0
    (3, True)
    """
    budget = Budget(block=block, rounds=pairs, idle=idle)
    a(), b()  # warm up: caches, plans, thread pools
    number = max(calibrate(a, sync, budget), calibrate(b, sync, budget))
    ta: list[float] = []
    tb: list[float] = []
    for i in range(pairs):
        if i % 2 == 0:
            ta.append(time_block(a, sync, number, idle))
            tb.append(time_block(b, sync, number, idle))
        else:
            tb.append(time_block(b, sync, number, idle))
            ta.append(time_block(a, sync, number, idle))
    ratios = tuple(x / y for x, y in zip(ta, tb, strict=True))
    return Pair(statistics.median(ta), statistics.median(tb), ratios)
