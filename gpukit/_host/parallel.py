"""Blocked, threaded element-wise passes on the host: the cores BLAS is not using.

The numpy backend's kernels (bias + activation, the optimizer updates, softmax
cross-entropy) are gpukit's compiled C loops (``gpukit/_host/native.py``), or chains of
NumPy ufuncs where no compiled library was built. Run whole-array, one core does all of
it (and a ufunc chain streams the data through memory once per ufunc). :func:`run`
splits the work into blocks of about :data:`BLOCK` elements, so a chain's temporaries
stay in the core's cache, and hands contiguous runs of blocks to a small persistent pool
of threads (the C loops and NumPy's ufunc loops on plain float arrays release the GIL).

The thread count is the BLAS library's own: these passes run between BLAS calls,
never during one, so they use the cores BLAS was given and no more. A
``threadpoolctl.threadpool_limits`` (or ``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS``)
that lowers BLAS's count lowers ours with it, and the process's CPU affinity caps it.
"""

from __future__ import annotations

import contextvars
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import numpy as np

__all__ = [
    "BLOCK",
    "NATIVE_MIN",
    "PARALLEL_MIN",
    "constant",
    "max_threads",
    "n_threads",
    "plan",
    "run",
    "scratch",
    "spans",
]

#: Bytes per array of a block (64K float32, 32K float64 elements): a block's input,
#: output and scratch arrays stay in a core's L2 or near it, and a ufunc pass over a
#: block outweighs the Python cost of the ufunc call (a long chain such as GELU's costs
#: more in calls than in arithmetic on small blocks).
BLOCK = 1 << 18

#: Below this many elements of a memory-bound pass (``weight`` 1 in :func:`plan`) one
#: thread does the work: handing a block to the pool and waiting for it costs ~20-40 us,
#: the time of a few passes over 64K float32 elements. (A lock hand-off of half the cost
#: was tried and dropped: with another library's threads spinning on the same cores,
#: large passes took 5-8x their time in most runs; docs/benchmarks record
#: 2026-11-26-idle-three-runs.md.)
PARALLEL_MIN = 1 << 17

#: The same for the compiled kernels (``gpukit/_host/native.py``), which split over the
#: library's own threads (``csrc/pool.h``): no Python in the hand-off, and a worker that
#: ran a span in the last ~200 us starts the next within a microsecond, one asleep in a
#: few.
NATIVE_MIN = 1 << 15

_lock = threading.Lock()
_local = threading.local()
_pool: ThreadPoolExecutor | None = None
_blas: tuple[Callable[[], int | None], ...] | None = None


def _env_cap() -> int | None:
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(name, "").split(",")[0].strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return None


def _cores() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        n = os.cpu_count() or 1
    cap = _env_cap()
    return max(1, min(n, cap) if cap else n)


_CORES = _cores()


def _blas_counts() -> tuple[Callable[[], int | None], ...]:
    """The thread-count getters of threadpoolctl's controllers of the BLAS libraries
    loaded here, once the user has imported threadpoolctl (only then can a limit have
    been set through it)."""
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        controllers = ThreadpoolController().lib_controllers
        _blas = tuple(c.get_num_threads for c in controllers if c.user_api == "blas")
    return _blas


def max_threads() -> int:
    """The most threads :func:`run` ever uses: the cores available to the process."""
    return _CORES


def n_threads() -> int:
    """Threads an element-wise pass may use now: the cores available to the process,
    capped by the BLAS thread count a ``threadpoolctl`` limit has set."""
    n = _CORES
    if n > 1 and "threadpoolctl" in sys.modules:
        # asked on every pass (a limit may have changed), so without min()/max() calls,
        # which cost more than the getters
        for count in _blas_counts():
            t = count()
            if t is not None and t < n:
                n = t if t > 1 else 1
    return n


def _forget_pool() -> None:
    """In a forked child the pool's threads do not exist: start a new pool on first use
    (the old one would queue work that no thread ever runs)."""
    global _pool, _lock
    _pool, _lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(
                    max_workers=max(1, _CORES - 1), thread_name_prefix="gpukit-host"
                )
    return _pool


def plan(
    n: int,
    per_item: int = 1,
    weight: float = 1.0,
    least: int = PARALLEL_MIN,
    threads: int | None = None,
) -> int:
    """The number of spans (threads) :func:`run` splits ``n`` indices of ``per_item``
    elements into: 1 below ``least / weight`` elements in all.

    ``weight``: the pass's single-thread time per element relative to the memory-bound
    one ``least`` is set for (a float32 copy with a bias), so that a pass splits once its
    work outweighs the hand-off, whatever it computes per element; ``least``:
    :data:`PARALLEL_MIN` for :func:`run`'s threads, :data:`NATIVE_MIN` for the compiled
    kernels' own; ``threads``: the threads available, :func:`n_threads` when None (a
    caller that keeps the split per count asks once).
    """
    if threads is None:
        threads = n_threads()
    if threads > 1 and n * per_item * weight >= least:
        return min(threads, n)
    return 1


def run(
    work: Callable[[int, int, int], Any],
    n: int,
    per_item: int = 1,
    threads: int = 0,
    weight: float = 1.0,
) -> list[Any]:
    """Call ``work(k, lo, hi)`` for the ``k``-th of ``threads`` contiguous spans of
    ``range(n)``, in parallel, and return the results in order.

    ``threads`` defaults to :func:`plan` (``per_item``: the elements one index stands
    for, a row's length; ``weight``: the pass's cost per element); a caller that
    prepares something per span (scratch memory allocated before any write) takes it
    from :func:`plan` first. The caller's thread
    does the first span and the pool the others, the caller taking back any span no pool
    thread has started once its own is done; each runs in a copy of the caller's context
    (NumPy's ``errstate`` included). ``work`` walks its span in blocks
    (:func:`spans`), so that its temporaries stay in cache.
    """
    threads = threads or plan(n, per_item, weight)
    if threads == 1:
        return [work(0, 0, n)]
    bounds = [n * k // threads for k in range(threads + 1)]
    pool = _executor()
    futures = [
        pool.submit(contextvars.copy_context().run, work, k, bounds[k], bounds[k + 1])
        for k in range(1, threads)
    ]
    try:
        first = work(0, bounds[0], bounds[1])
        # a span no pool thread has started (the scheduler has not run one: a loaded
        # machine) is the caller's to run, not to wait for
        mine = {
            k: work(k, bounds[k], bounds[k + 1]) for k, f in enumerate(futures, 1) if f.cancel()
        }
    finally:
        # the spans write into the caller's arrays: none may still run once this returns
        # or raises, or an error would leave writes landing after the caller saw it
        # (a cancelled future counts as done only once a pool thread has dequeued it)
        wait([f for f in futures if not f.cancel()])
    return [first] + [mine[k] if k in mine else f.result() for k, f in enumerate(futures, 1)]


def spans(lo: int, hi: int, item_bytes: int) -> range:
    """Starts of the blocks of about :data:`BLOCK` bytes that cover ``range(lo, hi)``
    (``item_bytes`` per index); each block ends at the next start or ``hi``."""
    return range(lo, hi, max(1, BLOCK // max(item_bytes, 1)))


def scratch(dtype: Any, k: int, size: int) -> list[Any]:
    """``k`` flat scratch arrays of ``size`` elements of ``dtype``, this thread's own.

    Allocated on a thread's first request and kept, so a kernel's blocks allocate
    nothing; each request returns views of the same memory, so a caller never holds two
    requests' arrays at once.
    """
    dtype = np.dtype(dtype)
    have = _local.__dict__.get(dtype)
    if have is None or len(have) < k or have[0].size < size:
        m = max(size, BLOCK // dtype.itemsize, 0 if have is None else have[0].size)
        have = _local.__dict__[dtype] = [
            np.empty(m, dtype) for _ in range(max(k, 0 if have is None else len(have)))
        ]
    return [a[:size] for a in have[:k]]


def constant(dtype: Any, value: float, size: int) -> np.ndarray:
    """A read-only flat array of ``size`` elements equal to ``value``, this thread's own:
    a ufunc broadcasting a scalar is several times slower than one with two arrays
    (``np.maximum(z, 0)`` 13 us against 4 us on 32K float32)."""
    key = (np.dtype(dtype), float(value))
    have = _local.__dict__.get(key)
    if have is None or have.size < size:
        have = _local.__dict__[key] = np.full(max(size, BLOCK // key[0].itemsize), value, dtype)
        have.flags.writeable = False
    return have[:size]
